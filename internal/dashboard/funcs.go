package dashboard

import (
	"html/template"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/internal/explain"
)

var funcs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return explain.FormatDuration(time.Since(t).Round(time.Second)) + " ago"
	},
	// plural picks the word for n things: "1 Service", "2 Services", "0 Services".
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"conditionStatus": func(cs []duck.Condition) string {
		for _, c := range cs {
			if c.Type == duck.ConditionReady {
				return string(c.Status)
			}
		}
		return "Unknown"
	},
}
