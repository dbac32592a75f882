package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ExampleKey is the documentation-only key of every Knative ConfigMap; no parser reads
// it.
const ExampleKey = "_example"

// The parsers below follow knative.dev/pkg/configmap: an absent key keeps the default;
// a present one is parsed with surrounding whitespace trimmed, so "" is an error for a
// bool, int, duration or quantity; every error names the key. Each returns the first
// error of a list of keys, as Knative's cm.Parse does.

type parseFunc func(data map[string]string) error

func parse(data map[string]string, fs ...parseFunc) error {
	for _, f := range fs {
		if err := f(data); err != nil {
			return err
		}
	}
	return nil
}

func lookup(data map[string]string, key string) (string, bool) {
	v, ok := data[key]
	return strings.TrimSpace(v), ok
}

func keyError(key string, err error) error { return fmt.Errorf("failed to parse %q: %w", key, err) }

func asString(key string, target *string) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			*target = v
		}
		return nil
	}
}

func asBool(key string, target *bool) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return keyError(key, err)
			}
			*target = b
		}
		return nil
	}
}

func asInt64(key string, target *int64) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			i, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return keyError(key, err)
			}
			*target = i
		}
		return nil
	}
}

func asInt(key string, target *int) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			i, err := strconv.Atoi(v)
			if err != nil {
				return keyError(key, err)
			}
			*target = i
		}
		return nil
	}
}

func asDuration(key string, target *time.Duration) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return keyError(key, err)
			}
			*target = d
		}
		return nil
	}
}

func asQuantity(key string, target **resource.Quantity) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return keyError(key, err)
			}
			*target = &q
		}
		return nil
	}
}

// asStringSet splits on commas; the result replaces the default set.
func asStringSet(key string, target *[]string) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			var set []string
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					set = append(set, s)
				}
			}
			*target = set
		}
		return nil
	}
}

// asTriState is config-defaults' enable-service-links: true or false
// (case-insensitive); anything else leaves it unset, never an error.
func asTriState(key string, target **bool) parseFunc {
	return func(data map[string]string) error {
		if v, ok := lookup(data, key); ok {
			switch {
			case strings.EqualFold(v, "true"):
				t := true
				*target = &t
			case strings.EqualFold(v, "false"):
				f := false
				*target = &f
			default:
				*target = nil
			}
		}
		return nil
	}
}

// asOneOf accepts one of values, case-insensitively ("" too if allowEmpty), and
// stores it lower-cased.
func asOneOf(key string, target *string, values ...string) parseFunc {
	return func(data map[string]string) error {
		v, ok := lookup(data, key)
		if !ok {
			return nil
		}
		for _, want := range values {
			if strings.EqualFold(v, want) {
				*target = want
				return nil
			}
		}
		return fmt.Errorf("%q: %q is not one of %q", key, v, values)
	}
}

// dataOf is a ConfigMap's data; a nil ConfigMap has none.
func dataOf(data map[string]string) map[string]string {
	if data == nil {
		return map[string]string{}
	}
	return data
}
