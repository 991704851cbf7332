package offsets

// quoteIntKeys returns data with every object key written as a bare integer
// (fastjson's rendering of Map<Integer, …> keys, e.g. {0:12,-1:3}) turned
// into a JSON string ({"0":12,"-1":3}). Strings are skipped with their
// escapes; nothing else is changed, and malformed input is passed through for
// the JSON decoder to reject. When there is nothing to quote, data itself is
// returned.
func quoteIntKeys(data []byte) []byte {
	var (
		out     []byte
		from    int    // data[from:] has not been copied to out yet
		objects []bool // per open container: true for an object, false for an array
		atKey   bool   // the next value-like token is an object key
	)
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			i = skipString(data, i)
			atKey = false
		case c == '{':
			objects = append(objects, true)
			atKey = true
		case c == '[':
			objects = append(objects, false)
			atKey = false
		case c == '}' || c == ']':
			if n := len(objects); n > 0 {
				objects = objects[:n-1]
			}
			atKey = false
		case c == ',':
			atKey = len(objects) > 0 && objects[len(objects)-1]
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			// whitespace does not change what comes next
		case atKey && (c == '-' || (c >= '0' && c <= '9')):
			end := i + 1
			for end < len(data) && data[end] >= '0' && data[end] <= '9' {
				end++
			}
			if out == nil {
				out = make([]byte, 0, len(data)+len(data)/4)
			}
			out = append(out, data[from:i]...)
			out = append(out, '"')
			out = append(out, data[i:end]...)
			out = append(out, '"')
			from = end
			i = end - 1
			atKey = false
		default:
			atKey = false
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[from:]...)
}

// skipString returns the index of the quote that closes the string starting
// at data[open] (or the last index if it is unterminated).
func skipString(data []byte, open int) int {
	for i := open + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(data) - 1
}
