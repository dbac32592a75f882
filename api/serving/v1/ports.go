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
