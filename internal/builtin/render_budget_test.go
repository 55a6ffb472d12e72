package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/skillbus/skillbus/pkg/tool"
)

// allocated runs f and returns the bytes the Go heap allocated meanwhile
// (runtime.MemStats.TotalAlloc, so memory freed again still counts).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRenderBudgetHoldsAgainstHostileTemplates renders templates that,
// without the budget, make text/template's functions build gigabytes
// (printf widths and precisions up to fmt's 10⁶ per verb, applied to every
// element of a list; functions nested and looped; escapers that grow their
// input 6×), and checks each fails with code 413 while the provider
// allocates at most a few MB.
func TestRenderBudgetHoldsAgainstHostileTemplates(t *testing.T) {
	list := items(1000)
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	data := fmt.Sprintf(`{"list":%s,"nl":%s,"ctl":%s,"big":%s}`, list,
		str(strings.Repeat("a\n", 100000)), str(strings.Repeat("\x01", 60000)), str(strings.Repeat("é", 100000)))
	hostile := map[string]string{
		"repeated huge widths (11 KB)":   strings.Repeat(`{{len (printf "%999999d" 1)}}`, 380),
		"width on every list element":    `{{len (printf "%999999v" .list)}}`,
		"star width":                     strings.Repeat(`{{len (printf "%*d" 999999 1)}}`, 300),
		"negative star width":            strings.Repeat(`{{len (printf "%*d" -999999 1)}}`, 300),
		"huge precision":                 strings.Repeat(`{{len (printf "%.999999f" 1.5)}}`, 300),
		"indexed arguments":              `{{len (printf "%[1]999999d%[1]999999d%[1]999999d" 1)}}`,
		"width and list via print":       `{{len (print .list .list .list .list .list .list .list .list)}}{{range .list}}{{len (println $.big $.big)}}{{end}}`,
		"looped builds":                  `{{range .list}}{{len (printf "%200000d" 1)}}{{end}}`,
		"join with a long separator":     `{{len (join (printf "%200000s" "") .list)}}`,
		"nested escapers":                `{{len (html (html (html (html (printf "%50000s" "<")))))}}`,
		"js of control characters":       `{{range .list}}{{len (js $.ctl)}}{{end}}`,
		"urlquery of non-ASCII":          `{{range .list}}{{len (urlquery $.big)}}{{end}}`,
		"json of control characters":     `{{range .list}}{{len (json $.ctl)}}{{end}}`,
		"upper of upper":                 `{{len (upper (upper (upper (printf "%200000s" "a"))))}}`,
		"lines of many newlines, looped": `{{range .list}}{{len (lines $.nl)}}{{end}}`,
		"trunc of a huge count":          `{{range .list}}{{len (trunc 999999999 $.big)}}{{end}}`,
	}
	// What decoding the data costs (about 6 MB for these 700 KB of JSON)
	// is not the templates' doing: measure it, and allow a few MB more.
	baseArgs, _ := json.Marshal(map[string]any{"template": `{{len .list}}`, "data": json.RawMessage(data)})
	base := allocated(func() {
		if _, err := render(context.Background(), baseArgs); err != nil {
			t.Fatal(err)
		}
	})
	const limit = 4 << 20
	for name, tmpl := range hostile {
		t.Run(name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]any{"template": tmpl, "data": json.RawMessage(data)})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var err error
			used := allocated(func() { _, err = render(ctx, args) })
			var te *tool.Error
			if !errors.As(err, &te) || te.Code != "413" {
				t.Errorf("text.render(%.60q…) = %v; want code 413", tmpl, err)
			}
			if used > base+limit {
				t.Errorf("text.render(%.60q…) allocated %d KB more than decoding its data does (%d KB); want at most %d MB more", tmpl, (used-base)>>10, base>>10, limit>>20)
			}
		})
	}
}

// TestRenderBudgetLetsOrdinaryTemplatesThrough renders reports that use
// every budgeted function on ordinary sizes.
func TestRenderBudgetLetsOrdinaryTemplatesThrough(t *testing.T) {
	cases := []struct{ name, template, data, want string }{
		{"printf table", `{{range .}}{{printf "%-6s|%4d|%6.2f\n" .n .c .r}}{{end}}`, `[{"n":"go","c":12,"r":0.5},{"n":"md","c":3,"r":1}]`, "go    |  12|  0.50\nmd    |   3|  1.00\n"},
		{"print and println", `{{print "a" 1 true}}|{{println "b" 2}}`, `null`, "a1 true|b 2\n"},
		{"escapers", `{{html "<a&b>"}} {{js "it's"}} {{urlquery "a b&c"}}`, `null`, `&lt;a&amp;b&gt; it\'s a+b%26c`},
		{"join lines first trunc", `{{join ", " (first 2 .xs)}} {{len (lines .t)}} {{trunc 4 .t}}`, `{"xs":["a","b","c"],"t":"one\ntwo\n"}`, "a, b 2 one\n…"},
		{"trunc keeps the cut mark", `{{trunc 4 "  abc      def"}}|{{trunc 3 "      hello"}}|{{trunc 9 " short "}}|{{trunc 2 "é€"}}`, `null`, "abc …|hel…|short|é…"},
		{"json keys upper lower", `{{json .}} {{join "," (keys .)}} {{upper "a"}}{{lower "B"}}`, `{"b":[1,"x"],"a":null}`, `{"a":null,"b":[1,"x"]} a,b Ab`},
		{"a big report", `{{printf "%200000s" "x"}}`, `null`, strings.Repeat(" ", 199999) + "x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]any{"template": tc.template, "data": json.RawMessage(tc.data)})
			got, err := render(context.Background(), args)
			if err != nil || got != tc.want {
				t.Errorf("text.render(%q) = %.80q, %v; want %.80q", tc.template, got, err, tc.want)
			}
		})
	}
}

// TestRenderExactIntegers checks that JSON integers reach templates as
// integers with their exact value (issue: 9007199254740993 printed as
// 9.007199254740992e+15), and that other numbers still work as floats.
func TestRenderExactIntegers(t *testing.T) {
	data := `{"n":9007199254740993,"neg":-9223372036854775808,"huge":123456789012345678901234567890,"w":2,"f":1.5,"e":1e3,"xs":["a","b","c"]}`
	cases := []struct{ template, want string }{
		{`{{.n}}`, "9007199254740993"},
		{`{{printf "%d" .n}}`, "9007199254740993"},
		{`{{printf "%v|%s|%5d|%x" .w .w .w .w}}`, "2|2|    2|2"},
		{`{{printf "%.1f" .w}}`, "2.0"},
		{`{{json .n}}`, "9007199254740993"},
		{`{{json .}}`, `{"e":1000,"f":1.5,"huge":123456789012345678901234567890,"n":9007199254740993,"neg":-9223372036854775808,"w":2,"xs":["a","b","c"]}`},
		{`{{.neg}}`, "-9223372036854775808"},
		{`{{.huge}}`, "123456789012345678901234567890"},
		{`{{.f}} {{.e}}`, "1.5 1000"},
		{`{{eq .n 9007199254740993}} {{eq .n 9007199254740992}}`, "true false"},
		{`{{lt .w 3}} {{index .xs .w}} {{first .w .xs}} {{trunc .w "abcdef"}}`, "true c [a b] ab…"},
		{`{{join "," (first .w .xs)}} {{print .n}}`, "a,b 9007199254740993"},
		{`{{range .w}}x{{end}}`, "xx"},
	}
	for _, tc := range cases {
		args, _ := json.Marshal(map[string]any{"template": tc.template, "data": json.RawMessage(data)})
		got, err := render(context.Background(), args)
		if err != nil || got != tc.want {
			t.Errorf("text.render(%q) = %q, %v; want %q", tc.template, got, err, tc.want)
		}
	}
}

// FuzzPrintfSize checks that printfSize is an upper bound of what
// fmt.Sprintf builds, for any format over arguments of every kind
// text.render's data and functions produce.
func FuzzPrintfSize(f *testing.F) {
	for _, s := range []string{"%d", "%999d", "%*d", "%-*.*f", "%[2]*[1]d", "%q %x % X", "%v%v%v%v%v%v", "%!", "%", "%.3s|%8.2v", "%[3]v %[1]q", "%#v %+q", "%U %c", "%08.3e"} {
		f.Add(s)
	}
	args := []any{renderInt(-12), "héllo\x01\"\xff", 1.5, []any{"a", renderInt(2), nil, map[string]any{"k": "v\n"}}, map[string]any{"x": []any{true}}, json.Number("123456789012345678901234567890"), []string{"a", "bc"}, nil, true, 7}
	f.Fuzz(func(t *testing.T, format string) {
		if len(format) > 200 {
			return
		}
		bound := printfSize(format, args)
		if bound < 0 || bound > 4<<20 {
			return // refused
		}
		if got := len(fmt.Sprintf(format, args...)); got > bound {
			t.Fatalf("printfSize(%q) = %d; fmt.Sprintf built %d bytes", format, bound, got)
		}
	})
}

// TestRenderFuncErrorsInWords: a template function given the wrong kind of
// value says which kind it got in JSON's words, not Go's
// (map[string]interface {}, float64).
func TestRenderFuncErrorsInWords(t *testing.T) {
	for _, tc := range []struct{ template, data, want string }{
		{`{{join "," .m}}`, `{"m":{"a":1}}`, "join: an object is not a list"},
		{`{{join "," .s}}`, `{"s":"abc"}`, `join: the string "abc" is not a list`},
		{`{{first .s .xs}}`, `{"s":"ten","xs":[1]}`, `first: count the string "ten" is not a number`},
		{`{{trunc .b "abc"}}`, `{"b":true}`, "trunc: count the boolean true is not a number"},
	} {
		args, _ := json.Marshal(map[string]any{"template": tc.template, "data": json.RawMessage(tc.data)})
		_, err := render(context.Background(), args)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "interface {}") {
			t.Errorf("text.render(%q) error = %v; want one saying %q", tc.template, err, tc.want)
		}
	}
}
