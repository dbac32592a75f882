package admission

import (
	"fmt"
	"sort"
	"strings"
)

// CurrentField names the field being validated itself.
const CurrentField = ""

// FieldError is a set of diagnostics, each with the field paths it concerns, in the
// shape of Knative's apis.FieldError: its Error() prints "message: path, path" lines,
// merged by message and sorted, which is what Knative users see in kubectl's output.
// A nil *FieldError is no error. Methods never modify the receiver.
type FieldError struct {
	errs []fieldDiag
}

type fieldDiag struct {
	Message string
	Paths   []string
	Details string
	Warning bool
}

func newErr(msg string, details string, paths ...string) *FieldError {
	return &FieldError{errs: []fieldDiag{{Message: msg, Details: details, Paths: paths}}}
}

// ErrMissingField is "missing field(s)".
func ErrMissingField(paths ...string) *FieldError { return newErr("missing field(s)", "", paths...) }

// ErrDisallowedFields is "must not set the field(s)".
func ErrDisallowedFields(paths ...string) *FieldError {
	return newErr("must not set the field(s)", "", paths...)
}

// ErrInvalidValue is "invalid value: <v>".
func ErrInvalidValue(value any, path string, details ...string) *FieldError {
	return newErr(fmt.Sprint("invalid value: ", value), strings.Join(details, ", "), path)
}

// ErrGeneric is a free-form message.
func ErrGeneric(msg string, paths ...string) *FieldError { return newErr(msg, "", paths...) }

// ErrMissingOneOf is "expected exactly one, got neither".
func ErrMissingOneOf(paths ...string) *FieldError {
	return newErr("expected exactly one, got neither", "", paths...)
}

// ErrMultipleOneOf is "expected exactly one, got both".
func ErrMultipleOneOf(paths ...string) *FieldError {
	return newErr("expected exactly one, got both", "", paths...)
}

// ErrInvalidKeyName is "invalid key name <k>".
func ErrInvalidKeyName(key, path string, details ...string) *FieldError {
	return newErr(fmt.Sprintf("invalid key name %q", key), strings.Join(details, ", "), path)
}

// ErrOutOfBoundsValue is "expected lower <= v <= upper".
func ErrOutOfBoundsValue(value, lower, upper any, path string) *FieldError {
	return newErr(fmt.Sprintf("expected %v <= %v <= %v", lower, value, upper), "", path)
}

// WithDetails returns a copy whose diagnostics carry details.
func (fe *FieldError) WithDetails(details string) *FieldError {
	return fe.each(func(d *fieldDiag) { d.Details = details })
}

// AsWarning returns a copy whose diagnostics are warnings: reported, never denied.
func (fe *FieldError) AsWarning() *FieldError {
	return fe.each(func(d *fieldDiag) { d.Warning = true })
}

// each returns a copy with change applied to each diagnostic.
func (fe *FieldError) each(change func(*fieldDiag)) *FieldError {
	if fe == nil {
		return nil
	}
	out := &FieldError{errs: make([]fieldDiag, len(fe.errs))}
	for i, d := range fe.errs {
		change(&d)
		out.errs[i] = d
	}
	return out
}

// Also returns the union of fe and others.
func (fe *FieldError) Also(others ...*FieldError) *FieldError {
	n := 0
	if fe != nil {
		n = len(fe.errs)
	}
	for _, o := range others {
		if o != nil {
			n += len(o.errs)
		}
	}
	if n == 0 {
		return nil
	}
	out := &FieldError{errs: make([]fieldDiag, 0, n)}
	if fe != nil {
		out.errs = append(out.errs, fe.errs...)
	}
	for _, o := range others {
		if o != nil {
			out.errs = append(out.errs, o.errs...)
		}
	}
	return out
}

// ViaField prefixes every path with the given fields (outermost first).
func (fe *FieldError) ViaField(prefix ...string) *FieldError {
	if fe == nil {
		return nil
	}
	out := &FieldError{errs: make([]fieldDiag, len(fe.errs))}
	for i, d := range fe.errs {
		paths := make([]string, len(d.Paths))
		for j, p := range d.Paths {
			paths[j] = flattenPath(append(append([]string{}, prefix...), p))
		}
		d.Paths = paths
		out.errs[i] = d
	}
	return out
}

// ViaIndex prefixes every path with [i].
func (fe *FieldError) ViaIndex(i int) *FieldError { return fe.ViaField(fmt.Sprintf("[%d]", i)) }

// ViaFieldIndex is ViaIndex(i).ViaField(field).
func (fe *FieldError) ViaFieldIndex(field string, i int) *FieldError {
	return fe.ViaIndex(i).ViaField(field)
}

// ViaKey prefixes every path with [key].
func (fe *FieldError) ViaKey(key string) *FieldError { return fe.ViaField("[" + key + "]") }

// flattenPath joins path parts with dots, gluing indexes to the part before them.
func flattenPath(parts []string) string {
	var out []string
	for _, part := range parts {
		// A map key ([serving.knative.dev/x]) is glued whole: its dots are not fields.
		if len(out) > 0 && strings.HasPrefix(part, "[") && strings.HasSuffix(part, "]") && !strings.Contains(part[1:], "[") {
			out[len(out)-1] += part
			continue
		}
		for _, p := range strings.Split(part, ".") {
			switch {
			case p == CurrentField:
			case len(out) > 0 && strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]"):
				out[len(out)-1] += p
			default:
				out = append(out, p)
			}
		}
	}
	return strings.Join(out, ".")
}

// Errors returns only the error-level diagnostics, or nil.
func (fe *FieldError) Errors() *FieldError { return fe.filter(false) }

// Warnings returns only the warnings, or nil.
func (fe *FieldError) Warnings() *FieldError { return fe.filter(true) }

func (fe *FieldError) filter(warning bool) *FieldError {
	if fe == nil {
		return nil
	}
	var out []fieldDiag
	for _, d := range fe.errs {
		if d.Warning == warning {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &FieldError{errs: out}
}

// Lines returns one line per merged diagnostic: "message: path, path" (+ "\ndetails").
func (fe *FieldError) Lines() []string {
	if fe == nil {
		return nil
	}
	type key struct {
		warning      bool
		msg, details string
	}
	merged := map[key]*fieldDiag{}
	var order []key
	for _, d := range fe.errs {
		k := key{d.Warning, d.Message, d.Details}
		m, ok := merged[k]
		if !ok {
			c := d
			c.Paths = nil
			m = &c
			merged[k] = m
			order = append(order, k)
		}
		for _, p := range d.Paths {
			if !contains(m.Paths, p) {
				m.Paths = append(m.Paths, p)
			}
		}
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.msg != b.msg {
			return a.msg < b.msg
		}
		if a.details != b.details {
			return a.details < b.details
		}
		return !a.warning && b.warning
	})
	lines := make([]string, 0, len(order))
	for _, k := range order {
		d := merged[k]
		sort.Strings(d.Paths)
		line := fmt.Sprintf("%s: %s", d.Message, strings.Join(d.Paths, ", "))
		if d.Details != "" {
			line += "\n" + d.Details
		}
		lines = append(lines, line)
	}
	return lines
}

// Error prints the diagnostics as Knative does.
func (fe *FieldError) Error() string { return strings.Join(fe.Lines(), "\n") }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
