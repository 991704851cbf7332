package nameserver

// Readiness is what the name server has of what clients need (Server.Readiness): the
// state a readiness probe (package observe, /readyz) reports.
type Readiness struct {
	// Serving: Start served the port, which has not failed (remoting.Server.Failed) and
	// the server is not shut down.
	Serving bool
}

// Missing names what r lacks for clients to use the name server; empty when ready.
func (r Readiness) Missing() []string {
	if !r.Serving {
		return []string{"name server not serving"}
	}
	return nil
}

// Readiness reports the name server's readiness state.
func (s *Server) Readiness() Readiness {
	if !s.serving.Load() || s.ctx.Err() != nil {
		return Readiness{}
	}
	select {
	case <-s.rs.Failed():
		return Readiness{}
	default:
		return Readiness{Serving: true}
	}
}
