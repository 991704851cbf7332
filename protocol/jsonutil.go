package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ferrymq/ferry/internal/fastjson"
)

// decodeJSON unmarshals a JSON object body into v. It accepts fastjson's
// bare integer map keys ({0:"a"}) and wraps every failure in ErrBadBody.
func decodeJSON(what string, data []byte, v any) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return fmt.Errorf("%w: %s: empty body", ErrBadBody, what)
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("%w: %s: body is not a JSON object", ErrBadBody, what)
	}
	if err := json.Unmarshal(fastjson.QuoteBareKeys(trimmed), v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadBody, what, err)
	}
	return nil
}
