package broker

import (
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/remoting"
)

// signed adds the broker's ACL credentials (AccessKey and Signature, package acl/sign) to a
// request it sends to a name server or its master, when it has credentials; the peer
// with ACL on checks them. It returns req.
func signed(c sign.Credentials, req *remoting.Command) *remoting.Command {
	if c.AccessKey != "" {
		req.ExtFields = remoting.Ext(c.SignFields(req.ExtFields, req.Body))
	}
	return req
}
