package routing

import "strings"

// CanonicalHost turns a Host header (or a rule's host) into the key the routing table
// is indexed by: lowercase, without port and without the trailing dot of a fully
// qualified name. ok is false when h cannot name a host, so that the caller answers 400
// instead of looking up garbage. It does not allocate for the common already-lowercase
// header.
func CanonicalHost(h string) (host string, ok bool) {
	host = h
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 || !validPortSuffix(host[end+1:]) {
			return "", false
		}
		host = host[:end+1]
		if !validIPv6Literal(host[1:end]) {
			return "", false
		}
		return lower(host), true
	}
	if i := strings.IndexByte(host, ':'); i >= 0 {
		if !validPortSuffix(host[i:]) {
			return "", false
		}
		host = host[:i]
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" {
		return "", false
	}
	for i := 0; i < len(host); i++ {
		if !isHostNameByte(host[i]) {
			return "", false
		}
	}
	return lower(host), true
}

// validPortSuffix accepts "", ":" and ":digits".
func validPortSuffix(s string) bool {
	if s == "" {
		return true
	}
	if s[0] != ':' || len(s) > 6 {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func validIPv6Literal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isHexDigit(c) && c != ':' && c != '.' {
			return false
		}
	}
	return true
}

// isHostNameByte allows the bytes of DNS names and IPv4 addresses; '_' too, because
// Kubernetes tooling and some clients use it in names.
func isHostNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_'
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
