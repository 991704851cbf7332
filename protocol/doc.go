// Package protocol defines the RocketMQ 4.x remoting vocabulary that Ferry
// speaks: request and response codes, system topic and group names, and the
// typed "custom headers" and JSON bodies carried by remoting commands.
//
// The package is pure data mapping. It knows nothing about frames,
// connections or handlers; the remoting layer owns the command envelope
// (code, language, version, opaque, flag, remark, extFields, body) and the
// broker, name server and client packages decide what a request means.
//
// # Custom headers (extFields)
//
// Every header type implements [Header]: EncodeExt writes its fields into a
// command's extFields map and DecodeExt reads them back. The conventions are
// the ones the official clients use on the wire:
//
//   - every value is a string; numbers are decimal ("42", "-1"), booleans are
//     "true"/"false" (decoding accepts any letter case);
//   - a required field that is absent yields a [*FieldError] wrapping
//     [ErrMissingField]; a value that cannot be parsed yields one wrapping
//     [ErrBadField]. For numeric and boolean fields an empty value counts as
//     absent, because the ROCKETMQ binary header codec of Java peers turns
//     empty strings into nulls. A present but empty string field is accepted;
//     whether it is meaningful is the handler's decision;
//   - optional fields that are absent decode to their zero value unless the
//     field's documentation names another default;
//   - unknown keys are ignored, so Java 5.x extras (ns, nsd, oway, lo, ACL
//     signatures, …) pass through harmlessly;
//   - encoders always write required fields and write optional fields only
//     when they differ from their zero value, except where a type documents
//     that it mirrors the Go client byte for byte (the send request header).
//
// # Bodies
//
// Most bodies are JSON in the shapes Java (fastjson) writes: route, cluster,
// topic-list, broker-registration, heartbeat, consumer-list, lock, KV-table,
// statistics, connection, group and topic/subscription-config bodies.
// Encoders are compact and deterministic. Decoders accept what Java writes,
// including maps with bare integer keys such as {0:"10.0.0.5:10911"} and
// maps keyed by MessageQueue objects ({{"brokerName":"b","queueId":0,
// "topic":"T"}:100}, see mqmap.go), and return empty collections as nil so
// that decode(encode(x)) is stable.
//
// The route encoder follows the strict rules the Go client's hand-written
// route parser imposes (no whitespace inside brokerAddrs, brokerAddrs always
// present, quoted keys, addresses free of ',' and '"').
//
// Two bodies are not JSON: the SEND_BATCH_MESSAGE item list, read without
// allocating by [BatchReader] and written by [AppendBatchItem] (layout drawn
// in batch.go), and the properties text of GET_BROKER_CONFIG and
// UPDATE_BROKER_CONFIG ([EncodeConfigProperties], [DecodeConfigProperties]).
package protocol
