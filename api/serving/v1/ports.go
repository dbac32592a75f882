package v1

// DefaultUserPort is the port a container serves on when it names none (Knative's).
const DefaultUserPort int32 = 8080

// ServingContainer is the index of the container that receives requests: the first
// that declares a port, else the first.
func (rs *RevisionSpec) ServingContainer() int {
	for i := range rs.Containers {
		if len(rs.Containers[i].Ports) > 0 {
			return i
		}
	}
	return 0
}

// UserPort is the port requests are sent to in the Revision's pods: the serving
// container's first port, else DefaultUserPort. The Deployment declares it and the
// gateway dials it.
func (rs *RevisionSpec) UserPort() int32 {
	if len(rs.Containers) == 0 {
		return DefaultUserPort
	}
	c := rs.Containers[rs.ServingContainer()]
	if len(c.Ports) > 0 && c.Ports[0].ContainerPort != 0 {
		return c.Ports[0].ContainerPort
	}
	return DefaultUserPort
}

// Protocol is what the gateway speaks to a Revision's pods.
type Protocol string

const (
	// ProtocolHTTP1 is HTTP/1.1, for a port named http1 or not named.
	ProtocolHTTP1 Protocol = "http1"
	// ProtocolH2C is HTTP/2 without TLS, with prior knowledge (no upgrade), for a
	// port named h2c: how Knative users say a container serves gRPC.
	ProtocolH2C Protocol = "h2c"
)

// Protocol is the protocol the serving container's first port is named after, as
// Knative reads it: h2c, else HTTP/1.1.
func (rs *RevisionSpec) Protocol() Protocol {
	if len(rs.Containers) == 0 {
		return ProtocolHTTP1
	}
	if c := rs.Containers[rs.ServingContainer()]; len(c.Ports) > 0 && c.Ports[0].Name == string(ProtocolH2C) {
		return ProtocolH2C
	}
	return ProtocolHTTP1
}
