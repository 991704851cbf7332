package broker

// Readiness is what a started broker has of what clients need (Broker.Readiness): the
// states a readiness probe (package observe, /readyz) reports.
type Readiness struct {
	// StoreRecovered: the store was opened and recovered and the broker serves its port
	// (Start returned).
	StoreRecovered bool
	// NameServers is how many name servers the broker registers with.
	NameServers int
	// Registered: in the latest registration round at least one name server accepted the
	// broker, so clients can find its routes. Not needed with no name server.
	Registered bool
	// Slave: the broker is a slave, which also needs MasterConnected.
	Slave bool
	// MasterConnected: a slave's replication session with its master is up.
	MasterConnected bool
}

// Missing names what r lacks for clients to use the broker, each as one short phrase;
// empty when the broker is ready.
func (r Readiness) Missing() []string {
	var m []string
	if !r.StoreRecovered {
		m = append(m, "store not recovered")
	}
	if r.NameServers > 0 && !r.Registered {
		m = append(m, "not registered with a name server")
	}
	if r.Slave && !r.MasterConnected {
		m = append(m, "slave not connected to its master")
	}
	return m
}

// Readiness reports the broker's readiness states. Before Start (the store is recovered
// in New, but the port is not served) StoreRecovered is false.
func (b *Broker) Readiness() Readiness {
	return Readiness{
		StoreRecovered:  b.serving.Load(),
		NameServers:     len(b.opts.NamesrvAddrs),
		Registered:      b.reg.accepted.Load(),
		Slave:           b.opts.Role == RoleSlave,
		MasterConnected: b.opts.Role == RoleSlave && b.repl.slaveConnected(),
	}
}
