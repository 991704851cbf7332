package tools

import (
	"strings"

	"github.com/spf13/cobra"
)

// topicAttrFlags are topic create's and update's attribute flags.
type topicAttrFlags struct {
	set    []string // --attr key=value, repeatable
	remove []string // --remove-attr key, repeatable
	dedup  string   // --dedup-window D: --attr dedupWindow=D ("off" removes it)
}

// add registers the flags on cmd.
func (f *topicAttrFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.set, "attr", nil,
		"set a topic attribute key=value (repeatable), e.g. dedupWindow=10m (deduplicated sends), retentionTime=24h, retentionBytes=10GiB, cleanupPolicy=compact or message.type=NORMAL")
	cmd.Flags().StringArrayVar(&f.remove, "remove-attr", nil, "remove a topic attribute (repeatable)")
	cmd.Flags().StringVar(&f.dedup, "dedup-window", "",
		"deduplicated sends: a retry of a message stored within this long is answered and not stored again (1s..24h; off removes it)")
}

// parse returns the attributes to set; a value without '=' is a usage error.
// --dedup-window off adds dedupWindow to f.remove.
func (f *topicAttrFlags) parse() (map[string]string, error) {
	switch f.dedup {
	case "":
	case "off":
		f.remove = append(f.remove, "dedupWindow")
	default:
		f.set = append(f.set, "dedupWindow="+f.dedup)
	}
	if len(f.set) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(f.set))
	for _, kv := range f.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, usageError("--attr %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
