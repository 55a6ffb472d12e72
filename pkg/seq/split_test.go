package seq

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestSplitTools(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one", `{"tool":"a"};`, []string{`{"tool":"a"}`}},
		{"two with spaces", " {\"tool\":\"a\"} ;\n\t{\"tool\":\"b\"};  ", []string{`{"tool":"a"}`, `{"tool":"b"}`}},
		{"semicolon in string", `{"tool":"a","args":{"q":"x;y"}};`, []string{`{"tool":"a","args":{"q":"x;y"}}`}},
		{"semicolon nested", `{"tool":"a","args":{"q":[";",{"r":";"}]}};{"tool":"b"};`, []string{`{"tool":"a","args":{"q":[";",{"r":";"}]}}`, `{"tool":"b"}`}},
		{"escaped quote", `{"tool":"a","args":{"q":"say \"};\" now"}};`, []string{`{"tool":"a","args":{"q":"say \"};\" now"}}`}},
		{"escaped backslash", `{"tool":"a","args":{"q":"c:\\"}};`, []string{`{"tool":"a","args":{"q":"c:\\"}}`}},
		{"braces in string", `{"tool":"a","args":{"q":"}}{{"}};`, []string{`{"tool":"a","args":{"q":"}}{{"}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans, err := SplitTools(tt.in)
			if err != nil {
				t.Fatalf("SplitTools(%q) error %v", tt.in, err)
			}
			var got []string
			for _, s := range spans {
				got = append(got, s.Text)
				if tt.in[s.Offset:s.Offset+len(s.Text)] != s.Text {
					t.Errorf("span offset %d does not point at %q", s.Offset, s.Text)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitTools(%q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitToolsErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"holds no tool call"}},
		{"blank", "  \n", []string{"holds no tool call"}},
		{"missing final semicolon", `{"tool":"a"}`, []string{"tool 1", "not followed by `;`"}},
		{"missing middle semicolon", `{"tool":"a"}{"tool":"b"};`, []string{"tool 1", "not followed by `;`", "character 13"}},
		{"doubled semicolon", `{"tool":"a"};;{"tool":"b"};`, []string{"doubled `;`", "character 14"}},
		{"leading semicolon", `;{"tool":"a"};`, []string{"before any tool object"}},
		{"not an object", `{"tool":"a"};"b";`, []string{"tool 2", "expected `{`"}},
		{"array item", `[{"tool":"a"}];`, []string{"tool 1", "expected `{`"}},
		{"unclosed string", `{"tool":"a};`, []string{"tool 1", "never closed", "`\"`"}},
		{"unclosed brace", `{"tool":"a","args":{"x":1};`, []string{"tool 1", "never closed", "add `}`"}},
		{"unclosed nested", `{"tool":"a","args":{"x":[1,{"y":2`, []string{"tool 1", "never closed", "add `}]}}`"}},
		{"unclosed bracket", `{"tool":"a","args":{"x":[1};`, []string{"does not match"}},
		{"stray close", `{"tool":"a"};}`, []string{"tool 2", "expected `{`"}},
		{"second unclosed", `{"tool":"a"};{"tool":"b";`, []string{"tool 2", "never closed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans, err := SplitTools(tt.in)
			if err == nil {
				t.Fatalf("SplitTools(%q) = %v; want an error", tt.in, spans)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("SplitTools(%q) error %v does not wrap ErrSyntax", tt.in, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("SplitTools(%q) error = %v; want it to contain %q", tt.in, err, w)
				}
			}
		})
	}
}
