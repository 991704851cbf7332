package protocol

// cancelHeaderCases covers the FERRY_CANCEL_SCHEDULED headers.
func cancelHeaderCases() []headerCase {
	return []headerCase{
		{
			name:     "CancelScheduledRequestHeader",
			full:     &CancelScheduledRequestHeader{Topic: "Orders", MsgID: "0A0000050000291100000000000003E8"},
			fresh:    func() Header { return new(CancelScheduledRequestHeader) },
			required: []string{"msgId"},
			absent:   map[string]bool{"topic": true},
		},
		{
			name:     "CancelScheduledResponseHeader",
			full:     &CancelScheduledResponseHeader{Status: CancelStatusCancelled, Topic: "Orders"},
			fresh:    func() Header { return new(CancelScheduledResponseHeader) },
			required: []string{"status"},
			absent:   map[string]bool{"topic": true},
		},
	}
}
