package conf

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/go-viper/mapstructure/v2"
	"github.com/stretchr/testify/require"
)

// decodeAs decodes s as a value of type typ, as Load decodes a config file.
func decodeAs(t *testing.T, typ reflect.Type, s string) any {
	t.Helper()
	holder := reflect.New(reflect.StructOf([]reflect.StructField{{Name: "V", Type: typ, Tag: `mapstructure:"v"`}}))
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		DecodeHook: decodeHook(), WeaklyTypedInput: true, Result: holder.Interface()})
	require.NoError(t, err)
	require.NoError(t, dec.Decode(map[string]any{"v": s}), "%q as a %s", s, typ)
	return holder.Elem().Field(0).Interface()
}

// The comment of every key's field states the default its tag gives (the tag is the
// source; the comment is for the reader of the code and must not drift from it).
func TestFieldCommentsStateTheTableDefault(t *testing.T) {
	// The default a comment states: "Default 16MiB.", `Default "broker-a".`,
	// `Default ["127.0.0.1:9876"].`, "Default true (RocketMQ: false)".
	defaultInDoc := regexp.MustCompile(`Default (\[?"[^"]*"\]?|[^\s.,;(]+(?:\.\d+[^\s.,;(]*)?)`)
	fset := token.NewFileSet()
	docs := map[string]string{} // struct.field -> doc
	for _, file := range []string{"conf.go", "broker.go", "namesrv.go", "console.go", "controller.go"} {
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, fld := range st.Fields.List {
				for _, name := range fld.Names {
					docs[ts.Name.Name+"."+name.Name] = fld.Doc.Text()
				}
			}
			return false
		})
	}
	checked := 0
	var walk func(t reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			def, ok := f.Tag.Lookup("default")
			if !ok {
				continue
			}
			doc := strings.Join(strings.Fields(docs[typ.Name()+"."+f.Name]), " ")
			m := defaultInDoc.FindStringSubmatch(doc)
			require.NotNil(t, m, "%s.%s: the comment states no default", typ.Name(), f.Name)
			stated := strings.Trim(m[1], "[]")
			if s, err := strconv.Unquote(stated); err == nil {
				stated = s
			}
			if stated == "DefaultDelayLevels" {
				stated = DefaultDelayLevels
			}
			require.Equal(t, decodeAs(t, f.Type, def), decodeAs(t, f.Type, stated),
				"%s.%s: comment (%q) and default tag (%q) differ", typ.Name(), f.Name, stated, def)
			checked++
		}
	}
	walk(typeOfConfig())
	require.Equal(t, len(Keys()), checked)
}
