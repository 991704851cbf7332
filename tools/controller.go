package tools

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/controller"
)

// The controller commands (automatic failover): controller status, ha status, ha elect.

// envController is the environment variable of --controller.
const envController = "FERRY_CONTROLLER"

// defaultController is the controller ferryctl talks to without --controller or
// FERRY_CONTROLLER (controller.listen's default).
const defaultController = "127.0.0.1:9878"

// controllerFlag adds --controller to cmd's persistent flags, read into addrs.
func controllerFlag(cmd *cobra.Command, addrs *string) {
	def := os.Getenv(envController)
	if def == "" {
		def = defaultController
	}
	cmd.PersistentFlags().StringVar(addrs, "controller", def,
		"controller addresses host:port (controller.listen), separated by ',' or ';' (env "+envController+")")
}

// splitAddrs splits a list of addresses separated by ',' or ';'.
func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// withController runs fn with a client of the controllers addrs names, signing with the
// global account and dialling TLS with --tls.
func (e *env) withController(addrs string, fn func(c *controller.Client, addrs []string) error) error {
	o := controller.DefaultClientOptions()
	o.Addrs = splitAddrs(addrs)
	if len(o.Addrs) == 0 {
		return usageError("--controller names no address")
	}
	if e.accessKey != "" {
		o.Credentials = &acl.Credentials{AccessKey: e.accessKey, SecretKey: e.secretKey}
	}
	if e.useTLS {
		o.TLS = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // as for the other servers, documented
	}
	c, err := controller.NewClient(o)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return fn(c, o.Addrs)
}

// nodeRow is one controller node in controller status.
type nodeRow struct {
	Addr         string `json:"addr" yaml:"addr"`
	NodeID       string `json:"nodeId" yaml:"nodeId"`
	State        string `json:"state" yaml:"state"`
	Leader       string `json:"leader" yaml:"leader"`
	Term         uint64 `json:"term" yaml:"term"`
	AppliedIndex uint64 `json:"appliedIndex" yaml:"appliedIndex"`
	CommitIndex  uint64 `json:"commitIndex" yaml:"commitIndex"`
	Groups       int    `json:"groups" yaml:"groups"`
	Error        string `json:"error,omitempty" yaml:"error,omitempty"`
}

func newControllerCommand(e *env) *cobra.Command {
	var addrs string
	status := &cobra.Command{
		Use:   "status",
		Short: "Each controller node's Raft state: id, state, leader, term, applied and committed index",
		Example: "  ferryctl controller status --controller 10.0.0.11:9878,10.0.0.12:9878,10.0.0.13:9878\n" +
			"  FERRY_CONTROLLER=127.0.0.1:9878 ferryctl controller status -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.withController(addrs, func(c *controller.Client, list []string) error {
				rows := make([]nodeRow, 0, len(list))
				answered := 0
				var lastErr error
				for _, a := range list {
					st, err := c.StatusOf(cmd.Context(), a)
					if err != nil {
						lastErr = err
						rows = append(rows, nodeRow{Addr: a, Error: err.Error()})
						continue
					}
					answered++
					rows = append(rows, nodeRow{Addr: a, NodeID: st.NodeID, State: st.State, Leader: st.Leader,
						Term: st.Term, AppliedIndex: st.AppliedIndex, CommitIndex: st.CommitIndex, Groups: len(st.Groups)})
				}
				if err := e.emit(rows, func(w io.Writer) {
					fmt.Fprintln(w, "ADDRESS\tNODE\tSTATE\tLEADER\tTERM\tAPPLIED\tCOMMITTED\tGROUPS")
					for _, r := range rows {
						if r.Error != "" {
							fmt.Fprintf(w, "%s\t-\terror\t-\t-\t-\t-\t-\t(%s)\n", r.Addr, r.Error)
							continue
						}
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", r.Addr, r.NodeID, r.State, dash(r.Leader),
							r.Term, r.AppliedIndex, r.CommitIndex, r.Groups)
					}
				}); err != nil {
					return err
				}
				if answered == 0 {
					return fmt.Errorf("no controller answered: %w", lastErr)
				}
				return nil
			})
		},
	}
	cmd := group("controller", "The controllers of automatic failover (Raft cluster)", status)
	controllerFlag(cmd, &addrs)
	return cmd
}

// replicaRow is one broker of a group in ha status.
type replicaRow struct {
	BrokerID       int64  `json:"brokerId" yaml:"brokerId"`
	Role           string `json:"role" yaml:"role"`
	Addr           string `json:"addr" yaml:"addr"`
	HAAddr         string `json:"haAddr" yaml:"haAddr"`
	InSyncStateSet bool   `json:"inSyncStateSet" yaml:"inSyncStateSet"`
	Alive          bool   `json:"alive" yaml:"alive"`
	Epoch          int32  `json:"epoch" yaml:"epoch"`
	MaxOffset      int64  `json:"maxOffset" yaml:"maxOffset"`
	// Lag is the master's max offset minus this replica's (bytes of commit log), absent
	// without a master.
	Lag *int64 `json:"lag,omitempty" yaml:"lag,omitempty"`
}

// haStatus is ha status's answer.
type haStatus struct {
	Group             string  `json:"group" yaml:"group"`
	Master            int64   `json:"master" yaml:"master"`
	MasterEpoch       int32   `json:"masterEpoch" yaml:"masterEpoch"`
	SyncStateSet      []int64 `json:"syncStateSet" yaml:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch" yaml:"syncStateSetEpoch"`
	// MasterRestarted: the master registered after a restart and is about to be elected
	// again (or replaced) at a new epoch; it serves nothing until then.
	MasterRestarted bool         `json:"masterRestarted" yaml:"masterRestarted"`
	Replicas        []replicaRow `json:"replicas" yaml:"replicas"`
}

// haStatusOf is the group as ha status shows it.
func haStatusOf(v controller.GroupView) haStatus {
	s := haStatus{Group: v.Name, Master: v.Master, MasterEpoch: v.MasterEpoch, SyncStateSet: v.SyncStateSet,
		SyncStateSetEpoch: v.SyncStateSetEpoch, MasterRestarted: v.MasterRestarted, Replicas: []replicaRow{}}
	master, hasMaster := v.Member(v.Master)
	for _, m := range v.Members {
		r := replicaRow{BrokerID: m.ID, Role: "slave", Addr: m.Addr, HAAddr: m.HAAddr, InSyncStateSet: slices.Contains(v.SyncStateSet, m.ID),
			Alive: m.Alive, Epoch: m.Epoch, MaxOffset: m.MaxOffset}
		if m.ID == v.Master {
			r.Role = "master"
		}
		if hasMaster {
			lag := max(master.MaxOffset-m.MaxOffset, 0)
			r.Lag = &lag
		}
		s.Replicas = append(s.Replicas, r)
	}
	return s
}

// emitHAStatus prints a group: a header line, then one row per replica.
func (e *env) emitHAStatus(v controller.GroupView) error {
	s := haStatusOf(v)
	return e.emit(s, func(w io.Writer) {
		master := "none"
		if s.Master != controller.NoBroker {
			master = fmt.Sprint(s.Master)
		}
		restarted := ""
		if s.MasterRestarted {
			restarted = " (master restarted: a new epoch is being elected)"
		}
		fmt.Fprintf(w, "group %s: master %s, epoch %d, SyncStateSet %v (epoch %d)%s\n", s.Group, master, s.MasterEpoch,
			s.SyncStateSet, s.SyncStateSetEpoch, restarted)
		fmt.Fprintln(w, "ID\tROLE\tADDRESS\tHA ADDRESS\tIN SET\tALIVE\tEPOCH\tMAX OFFSET\tLAG")
		for _, r := range s.Replicas {
			lag := "-"
			if r.Lag != nil {
				lag = fmt.Sprint(*r.Lag)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%v\t%v\t%d\t%d\t%s\n", r.BrokerID, r.Role, r.Addr, dash(r.HAAddr),
				r.InSyncStateSet, r.Alive, r.Epoch, r.MaxOffset, lag)
		}
	})
}

func newHACommand(e *env) *cobra.Command {
	var addrs, broker string
	status := &cobra.Command{
		Use:   "status -b GROUP",
		Short: "A broker group's master, epochs, SyncStateSet and each replica's address, liveness, offset and lag",
		Example: "  ferryctl ha status -b broker-a --controller 10.0.0.11:9878,10.0.0.12:9878,10.0.0.13:9878\n" +
			"  ferryctl ha status -b broker-a -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if broker == "" {
				return usageError("-b GROUP is required")
			}
			return e.withController(addrs, func(c *controller.Client, _ []string) error {
				v, err := c.Group(cmd.Context(), broker)
				if err != nil {
					return err
				}
				return e.emitHAStatus(v)
			})
		},
	}
	status.Flags().StringVarP(&broker, "broker", "b", "", "broker group (brokerName)")

	var elect string
	var brokerID int64
	electCmd := &cobra.Command{
		Use:   "elect -b GROUP --broker-id N",
		Short: "Planned switchover: make broker N (a live member of the SyncStateSet) the group's master",
		Long: "Planned switchover: the controller elects broker N (alive, in the SyncStateSet; outside it only\n" +
			"with electUncleanMaster and nobody of the set alive) as the group's master, bumping the master\n" +
			"epoch. The old master steps down when it learns the new epoch (its next heartbeat). --broker-id 0\n" +
			"lets the controller choose, which it refuses while the master is alive.",
		Example: "  ferryctl ha elect -b broker-a --broker-id 2",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if elect == "" {
				return usageError("-b GROUP is required")
			}
			if brokerID < 0 {
				return usageError("--broker-id must not be negative")
			}
			return e.withController(addrs, func(c *controller.Client, _ []string) error {
				v, err := c.Elect(cmd.Context(), elect, brokerID)
				if err != nil {
					return electHint(err)
				}
				return e.emitHAStatus(v)
			})
		},
	}
	electCmd.Flags().StringVarP(&elect, "broker", "b", "", "broker group (brokerName)")
	electCmd.Flags().Int64Var(&brokerID, "broker-id", 0, "the broker to elect (its id in ha status); 0: the controller chooses")
	cmd := group("ha", "Broker groups under automatic failover: status and planned switchover", status, electCmd)
	controllerFlag(cmd, &addrs)
	return cmd
}

// electHint adds what to do to an election's refusal.
func electHint(err error) error {
	switch {
	case errors.Is(err, controller.ErrMasterAlive):
		return fmt.Errorf("%w (name the new master with --broker-id)", err)
	case errors.Is(err, controller.ErrNotEligible):
		return fmt.Errorf("%w (it must be alive and in the SyncStateSet: see ferryctl ha status)", err)
	}
	return err
}

// dash shows an empty value as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// controllerCommands returns the failover command groups.
func controllerCommands(e *env) []*cobra.Command {
	return []*cobra.Command{newControllerCommand(e), newHACommand(e)}
}
