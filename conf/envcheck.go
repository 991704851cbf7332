package conf

import "strings"

// UnknownEnvVar is a FERRY_* environment variable that names no configuration key.
type UnknownEnvVar struct {
	// Name is the variable as set, e.g. FERRY_BROKER_LISTN.
	Name string
	// Suggestion is the closest variable Ferry reads, e.g. FERRY_BROKER_LISTEN, or ""
	// when none is close.
	Suggestion string
}

// UnknownEnvVars returns the variables of environ ("NAME=value" entries, as os.Environ
// gives them) that start with EnvPrefix but configure nothing — a typo Load cannot see,
// since it only looks up the names it knows. A YAML key Ferry does not know is an
// error; a misspelled variable is reported here so the caller can warn about it.
func UnknownEnvVars(environ []string) []UnknownEnvVar {
	known := map[string]bool{ConfigFileEnv: true}
	var names []string
	for _, k := range Keys() {
		n := EnvVarName(k)
		known[n] = true
		names = append(names, n)
	}
	var out []UnknownEnvVar
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || known[name] {
			continue
		}
		u := UnknownEnvVar{Name: name}
		best := len(name)/3 + 1 // farther than this is not a typo of it
		for _, n := range names {
			if d := editDistance(name, n); d < best {
				best, u.Suggestion = d, n
			}
		}
		out = append(out, u)
	}
	return out
}
