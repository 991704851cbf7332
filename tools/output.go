package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/mattn/go-isatty"
	"go.yaml.in/yaml/v3"
)

// emit prints v in the format -o asks for: JSON and YAML from v's field tags (the stable,
// documented names), a table from table.
func (e *env) emit(v any, table func(w io.Writer)) error {
	switch e.output {
	case "json":
		enc := json.NewEncoder(e.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		return nil
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("write yaml: %w", err)
		}
		_, err = e.out.Write(b)
		return err
	default:
		tw := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
		table(tw)
		return tw.Flush()
	}
}

// isTerminal reports whether w is a terminal (progress bars, colour).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// humanBytes formats a byte count with a binary unit.
func humanBytes(n float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", n, units[i])
	}
	return fmt.Sprintf("%.1f %s", n, units[i])
}
