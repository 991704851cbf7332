package console

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// Bounds on what one page asks the cluster for.
const (
	maxListedTopics = 200 // topics whose stats the topic list fetches
	maxListedGroups = 100 // groups whose members and lag the group list fetches
	maxFound        = 64  // messages one search shows
)

// brokerRow is one broker of the cluster page.
type brokerRow struct {
	Cluster, Broker, Addr, Role, Version, Uptime string
	ID                                           int64
	PutTPS, GetTPS, Disk                         string
	MaxOffset                                    string
	Err                                          string
}

// clusterPage lists every broker with its role, version, rates and disk use.
func (c *Console) clusterPage(w http.ResponseWriter, r *request) {
	v := view{Title: "Cluster"}
	ci, err := c.opts.Admin.ClusterInfo(r.ctx)
	if err != nil {
		v.Error = err.Error()
		c.render(w, r.Request, "cluster", r.session, v)
		return
	}
	var rows []brokerRow
	for _, cluster := range slices.Sorted(maps.Keys(ci.Clusters)) {
		for _, name := range ci.Clusters[cluster] {
			b := ci.Brokers[name]
			for _, id := range slices.Sorted(maps.Keys(b.Addrs)) {
				row := brokerRow{Cluster: cluster, Broker: name, ID: id, Addr: b.Addrs[id]}
				info, err := c.opts.Admin.BrokerRuntimeInfo(r.ctx, row.Addr)
				if err != nil {
					row.Err = err.Error()
				} else {
					row.Role = cmp.Or(info["brokerRole"], roleOfID(id))
					row.Version = info["brokerVersionDesc"]
					row.Uptime = strings.Trim(info["runtime"], "[] ")
					row.PutTPS, row.GetTPS = firstField(info["putTps"]), firstField(info["getTransferedTps"])
					row.MaxOffset = info["commitLogMaxOffset"]
					if f, err := strconv.ParseFloat(info["commitLogDiskRatio"], 64); err == nil {
						row.Disk = fmt.Sprintf("%.1f %%", f*100)
					}
				}
				rows = append(rows, row)
			}
		}
	}
	v.Data = rows
	c.render(w, r.Request, "cluster", r.session, v)
}

// roleOfID names a member by its broker id when the broker does not say.
func roleOfID(id int64) string {
	if id == 0 {
		return "MASTER"
	}
	return "SLAVE"
}

// firstField is the first of the space-separated figures RocketMQ writes for a rate
// (the last 10 s, 1 min, 10 min), rounded.
func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	if x, err := strconv.ParseFloat(f[0], 64); err == nil {
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return f[0]
}

// topicRow is one topic of the topic list.
type topicRow struct {
	Name               string
	Queues             int
	Messages, MaxTotal int64
	TPS                string
	LastUpdate         string
	Stats              bool // the figures were fetched
	Err                string
}

// topicsData is the topic list page.
type topicsData struct {
	Query    string
	System   bool
	Topics   []topicRow
	More     int // topics listed without figures
	Clusters []string
}

// topicsPage lists the topics with their queues, messages and rates, and the create form.
func (c *Console) topicsPage(w http.ResponseWriter, r *request) {
	d := topicsData{Query: r.FormValue("q"), System: r.FormValue("system") == "1"}
	v := view{Title: "Topics", Data: &d}
	names, err := c.opts.Admin.ListTopics(r.ctx)
	if err != nil {
		v.Error = err.Error()
		c.render(w, r.Request, "topics", r.session, v)
		return
	}
	if ci, err := c.opts.Admin.ClusterInfo(r.ctx); err == nil {
		d.Clusters = slices.Sorted(maps.Keys(ci.Clusters))
	}
	slices.Sort(names)
	for _, n := range names {
		if !d.System && (protocol.IsSystemTopic(n) || protocol.IsRetryTopic(n) || protocol.IsDLQTopic(n)) {
			continue
		}
		if d.Query != "" && !strings.Contains(strings.ToLower(n), strings.ToLower(d.Query)) {
			continue
		}
		row := topicRow{Name: n}
		if len(d.Topics) < maxListedTopics {
			row.Stats = true
			st, err := c.opts.Admin.TopicStats(r.ctx, n)
			if err != nil {
				row.Err = err.Error()
			}
			if st != nil {
				row.Queues, row.Messages = len(st.Queues), st.Messages()
				var last time.Time
				for _, q := range st.Queues {
					row.MaxTotal += q.MaxOffset
					if q.LastUpdate.After(last) {
						last = q.LastUpdate
					}
				}
				row.LastUpdate = when(last)
				if tps, ok := c.rates.observe(n, row.MaxTotal); ok {
					row.TPS = strconv.FormatFloat(tps, 'f', 1, 64)
				}
			}
		} else {
			d.More++
		}
		d.Topics = append(d.Topics, row)
	}
	c.render(w, r.Request, "topics", r.session, v)
}

// when formats a time for a table cell; the zero time is blank.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// createTopic creates a topic from the form on the masters of a cluster (or every
// master).
func (c *Console) createTopic(w http.ResponseWriter, r *request) {
	name := strings.TrimSpace(r.PostForm.Get("topic"))
	queues, err := strconv.Atoi(cmp.Or(r.PostForm.Get("queues"), "8"))
	if err != nil || queues < 1 || queues > 1024 {
		c.fail(w, r, c.opts.Prefix+"/topics", fmt.Sprintf("queues: want a number from 1 to 1024, got %q", r.PostForm.Get("queues")))
		return
	}
	perm := protocol.PermRead | protocol.PermWrite
	switch r.PostForm.Get("perm") {
	case "r":
		perm = protocol.PermRead
	case "w":
		perm = protocol.PermWrite
	}
	cfg := client.TopicConfig{Name: name, ReadQueues: int32(queues), WriteQueues: int32(queues), Perm: perm,
		Order: r.PostForm.Get("order") == "1"}
	if err := c.opts.Admin.CreateTopic(r.ctx, cfg, client.Target{Cluster: r.PostForm.Get("cluster")}); err != nil {
		c.fail(w, r, c.opts.Prefix+"/topics", "create topic "+name+": "+err.Error())
		return
	}
	c.log.Info().Str("user", r.session.user).Str("topic", name).Int("queues", queues).Msg("console: topic created")
	c.done(w, r, c.opts.Prefix+"/topic?t="+url.QueryEscape(name), "topic "+name+" created")
}

// fail sends the user back to page with an error message.
func (c *Console) fail(w http.ResponseWriter, r *request, page, msg string) {
	c.setFlash(r.session, "error: "+msg)
	http.Redirect(w, r.Request, page, http.StatusSeeOther)
}

// done sends the user on to page with a message.
func (c *Console) done(w http.ResponseWriter, r *request, page, msg string) {
	c.setFlash(r.session, msg)
	http.Redirect(w, r.Request, page, http.StatusSeeOther)
}

// groupLag is a consumer group of a topic and its lag there.
type groupLag struct {
	Group string
	Lag   int64
	Err   string
}

// topicData is the topic page.
type topicData struct {
	Topic    string
	Route    *client.TopicRoute
	Queues   []client.QueueStats
	Messages int64
	Groups   []groupLag
}

// topicPage shows a topic's route, queues and consumer groups.
func (c *Console) topicPage(w http.ResponseWriter, r *request) {
	t := r.FormValue("t")
	d := topicData{Topic: t}
	v := view{Title: "Topic " + t, Data: &d}
	var errs []error
	var err error
	if d.Route, err = c.opts.Admin.TopicRoute(r.ctx, t); err != nil {
		v.Error = err.Error()
		c.render(w, r.Request, "topic", r.session, v)
		return
	}
	st, err := c.opts.Admin.TopicStats(r.ctx, t)
	errs = append(errs, err)
	if st != nil {
		d.Queues, d.Messages = st.Queues, st.Messages()
	}
	groups, err := c.opts.Admin.ConsumedBy(r.ctx, t)
	errs = append(errs, err)
	for _, g := range groups {
		gl := groupLag{Group: g}
		if cs, err := c.opts.Admin.ConsumeStats(r.ctx, g, t); err != nil {
			gl.Err = err.Error()
		} else {
			gl.Lag = cs.Lag()
		}
		d.Groups = append(d.Groups, gl)
	}
	if err := errors.Join(errs...); err != nil {
		v.Error = err.Error()
	}
	c.render(w, r.Request, "topic", r.session, v)
}

// groupRow is one group of the group list.
type groupRow struct {
	Name               string
	Members            int
	Lag                int64
	TPS                string
	RetryMax           int32
	Consume, Broadcast bool
	Orderly, Figures   bool
	Err                string
}

// groupsData is the group list page.
type groupsData struct {
	Query  string
	Groups []groupRow
	More   int
}

// groupsPage lists the subscription groups of every master with members and lag.
func (c *Console) groupsPage(w http.ResponseWriter, r *request) {
	d := groupsData{Query: r.FormValue("q")}
	v := view{Title: "Consumer groups", Data: &d}
	configs, err := c.groupConfigs(r)
	if err != nil {
		v.Error = err.Error()
	}
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if d.Query != "" && !strings.Contains(strings.ToLower(name), strings.ToLower(d.Query)) {
			continue
		}
		g := configs[name]
		row := groupRow{Name: name, RetryMax: g.RetryMaxTimes, Consume: g.ConsumeEnable, Broadcast: g.ConsumeBroadcastEnable,
			Orderly: g.ConsumeMessageOrderly}
		if len(d.Groups) < maxListedGroups {
			row.Figures = true
			if cc, err := c.opts.Admin.ConsumerConnections(r.ctx, name); err == nil {
				row.Members = len(cc.ConnectionSet)
			}
			if cs, err := c.opts.Admin.ConsumeStats(r.ctx, name, ""); err != nil {
				row.Err = err.Error()
			} else {
				row.Lag, row.TPS = cs.Lag(), strconv.FormatFloat(cs.ConsumeTPS, 'f', 1, 64)
			}
		} else {
			d.More++
		}
		d.Groups = append(d.Groups, row)
	}
	c.render(w, r.Request, "groups", r.session, v)
}

// groupConfigs merges the subscription group tables of every master.
func (c *Console) groupConfigs(r *request) (map[string]protocol.SubscriptionGroupConfig, error) {
	ci, err := c.opts.Admin.ClusterInfo(r.ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]protocol.SubscriptionGroupConfig{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ci.Brokers)) {
		addr := ci.Brokers[name].MasterAddr()
		if addr == "" {
			continue
		}
		gs, err := c.opts.Admin.SubscriptionGroups(r.ctx, addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for n, g := range gs {
			if _, ok := out[n]; !ok {
				out[n] = g
			}
		}
	}
	return out, errors.Join(errs...)
}

// queueRow is one queue of a group's progress.
type queueRow struct {
	Topic, Broker                     string
	Queue                             int32
	BrokerOffset, ConsumerOffset, Lag int64
	Last                              string
}

// subRow is one subscription of a group.
type subRow struct {
	Topic, Expression string
}

// groupData is the group page.
type groupData struct {
	Group       string
	Config      *protocol.SubscriptionGroupConfig
	Online      bool
	Members     []protocol.Connection
	Subs        []subRow
	ConsumeType string
	Model       string
	Queues      []queueRow
	Lag         int64
	TPS         string
	Topics      []string
	Now         string
}

// groupPage shows a group's members, subscriptions and lag per queue, and the reset form.
func (c *Console) groupPage(w http.ResponseWriter, r *request) {
	g := r.FormValue("g")
	d := groupData{Group: g, Now: c.opts.Now().UTC().Format("2006-01-02T15:04:05Z")}
	v := view{Title: "Group " + g, Data: &d}
	var errs []error
	if configs, err := c.groupConfigs(r); err == nil {
		if cfg, ok := configs[g]; ok {
			d.Config = &cfg
		}
	}
	topics := map[string]bool{}
	if cc, err := c.opts.Admin.ConsumerConnections(r.ctx, g); err == nil {
		d.Online, d.Members = true, cc.ConnectionSet
		d.ConsumeType, d.Model = string(cc.ConsumeType), string(cc.MessageModel)
		for _, t := range slices.Sorted(maps.Keys(cc.SubscriptionTable)) {
			d.Subs = append(d.Subs, subRow{Topic: t, Expression: cc.SubscriptionTable[t].SubString})
			topics[t] = true
		}
	}
	cs, err := c.opts.Admin.ConsumeStats(r.ctx, g, "")
	errs = append(errs, err)
	if cs != nil {
		for _, q := range cs.Queues {
			d.Queues = append(d.Queues, queueRow{Topic: q.Queue.Topic, Broker: q.Queue.BrokerName, Queue: q.Queue.QueueID,
				BrokerOffset: q.BrokerOffset, ConsumerOffset: q.ConsumerOffset, Lag: q.Lag(), Last: when(q.LastTimestamp)})
			topics[q.Queue.Topic] = true
		}
		d.Lag, d.TPS = cs.Lag(), strconv.FormatFloat(cs.ConsumeTPS, 'f', 1, 64)
	}
	for t := range topics {
		if !protocol.IsRetryTopic(t) {
			d.Topics = append(d.Topics, t)
		}
	}
	slices.Sort(d.Topics)
	if err := errors.Join(errs...); err != nil {
		v.Error = err.Error()
	}
	c.render(w, r.Request, "group", r.session, v)
}

// parseTime reads a time from a form: RFC 3339, or a date and time without a zone
// (an <input type=datetime-local>, "2006-01-02T15:04[:05]"), taken as UTC. Empty is the
// zero time.
func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2006-01-02T15:04:05Z) or 2006-01-02T15:04 (UTC)", s)
}

// resetOffsets moves a group's offsets of a topic to the first message stored at or
// after a time.
func (c *Console) resetOffsets(w http.ResponseWriter, r *request) {
	g, t := r.PostForm.Get("g"), r.PostForm.Get("topic")
	back := c.opts.Prefix + "/group?g=" + url.QueryEscape(g)
	at, err := parseTime(r.PostForm.Get("time"))
	if err == nil && at.IsZero() {
		err = errors.New("give a time")
	}
	if err != nil {
		c.fail(w, r, back, "reset offsets: "+err.Error())
		return
	}
	offsets, err := c.opts.Admin.ResetOffsetByTime(r.ctx, g, t, at)
	if err != nil {
		c.fail(w, r, back, "reset offsets of "+g+" in "+t+": "+err.Error())
		return
	}
	c.log.Info().Str("user", r.session.user).Str("group", g).Str("topic", t).Time("to", at).Msg("console: offsets reset")
	c.done(w, r, back, fmt.Sprintf("offsets of %s in %s reset to %s (%d queues)", g, t, at.UTC().Format(time.RFC3339), len(offsets)))
}

// messageRow is one found message.
type messageRow struct {
	MsgID, OffsetMsgID, Topic, Broker string
	Queue                             int32
	Offset                            int64
	Stored, Tags, Keys, Body          string
	Origin                            string // a retried or dead letter's original topic
	Size                              int
	Reconsumed                        int32
}

// bodyPreview shows at most n bytes of b: as text when it is UTF-8 without control
// characters, else as hex.
func bodyPreview(b []byte, n int) string {
	cut := b[:min(len(b), n)]
	suffix := ""
	if len(cut) < len(b) {
		suffix = "…"
	}
	text := strings.ToValidUTF8(string(cut), "\uFFFD")
	printable := text == string(cut) && !strings.ContainsFunc(text, func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\r' && r != '\t'
	})
	if printable {
		return text + suffix
	}
	return "hex: " + fmt.Sprintf("% x", cut) + suffix
}

// rowOf makes a result row of a message.
func rowOf(m *client.MessageExt, preview int) messageRow {
	return messageRow{MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Topic: m.Topic, Broker: m.Queue.BrokerName,
		Queue: m.Queue.QueueID, Offset: m.QueueOffset, Stored: when(m.StoreTime), Tags: m.Tags(),
		Keys: strings.Join(m.Keys(), " "), Body: bodyPreview(m.Body, preview), Size: len(m.Body), Reconsumed: m.ReconsumeTimes,
		Origin: m.Properties[message.PropertyRetryTopic]}
}

// messagesData is the search page.
type messagesData struct {
	By, Topic, ID, Key, Begin, End string
	Searched                       bool
	Found                          []messageRow
}

// messagesPage searches messages by id, key or store time.
func (c *Console) messagesPage(w http.ResponseWriter, r *request) {
	d := messagesData{By: r.FormValue("by"), Topic: strings.TrimSpace(r.FormValue("topic")), ID: strings.TrimSpace(r.FormValue("id")),
		Key: strings.TrimSpace(r.FormValue("key")), Begin: r.FormValue("begin"), End: r.FormValue("end")}
	v := view{Title: "Messages", Data: &d}
	found, err := c.search(r, &d)
	for _, m := range found {
		d.Found = append(d.Found, rowOf(m, 120))
	}
	if err != nil {
		v.Error = err.Error()
	}
	c.render(w, r.Request, "messages", r.session, v)
}

// search runs the search the form asks for; nothing without a search.
func (c *Console) search(r *request, d *messagesData) ([]*client.MessageExt, error) {
	begin, err := parseTime(d.Begin)
	if err != nil {
		return nil, err
	}
	end, err := parseTime(d.End)
	if err != nil {
		return nil, err
	}
	switch d.By {
	case "id":
		d.Searched = true
		return c.opts.Admin.QueryByID(r.ctx, d.Topic, d.ID)
	case "key":
		d.Searched = true
		return c.opts.Admin.QueryByKey(r.ctx, d.Topic, d.Key, begin, end, maxFound)
	case "time":
		d.Searched = true
		if begin.IsZero() && end.IsZero() {
			begin = c.opts.Now().Add(-time.Hour)
			d.Begin = begin.UTC().Format(time.RFC3339)
		}
		return c.opts.Admin.QueryByTime(r.ctx, d.Topic, begin, end, maxFound)
	}
	return nil, nil
}

// property is one message property.
type property struct{ Name, Value string }

// traceRow is one message-trace record.
type traceRow struct {
	Type, Time, Group, Details string
}

// messageData is the message page.
type messageData struct {
	Msg        messageRow
	Born       string
	BornHost   string
	StoreHost  string
	Properties []property
	Copies     int
	Trace      []traceRow
	TraceNote  string
}

// maxBodyShown bounds the body the message page shows.
const maxBodyShown = 16 << 10

// messagePage shows one message in full, and its trace records.
func (c *Console) messagePage(w http.ResponseWriter, r *request) {
	topic, id := r.FormValue("topic"), r.FormValue("id")
	d := messageData{}
	v := view{Title: "Message " + id, Data: &d}
	msgs, err := c.opts.Admin.QueryByID(r.ctx, topic, id)
	if err != nil {
		v.Error = err.Error()
		v.Data = nil
		c.render(w, r.Request, "message", r.session, v)
		return
	}
	m := msgs[0]
	d.Msg, d.Copies = rowOf(m, maxBodyShown), len(msgs)
	d.Born, d.BornHost, d.StoreHost = when(m.BornTime), m.BornHost.String(), m.StoreHost.String()
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		d.Properties = append(d.Properties, property{k, m.Properties[k]})
	}
	d.Trace, d.TraceNote = c.trace(r, m)
	c.render(w, r.Request, "message", r.session, v)
}

// The separators of a message-trace body: records, and fields within one.
const (
	traceRecordSep = "\u0002"
	traceFieldSep  = "\u0001"
)

// trace finds the trace records clients stored for m (keyed by its message id) in the
// trace topic.
func (c *Console) trace(r *request, m *client.MessageExt) ([]traceRow, string) {
	found, err := c.opts.Admin.QueryByKey(r.ctx, c.opts.TraceTopic, m.MsgID, time.Time{}, time.Time{}, maxFound)
	if err != nil {
		if errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrNoRoute) {
			return nil, "no trace records: the clients did not enable message tracing"
		}
		return nil, "trace lookup failed: " + err.Error()
	}
	var out []traceRow
	for _, t := range found {
		for rec := range strings.SplitSeq(string(t.Body), traceRecordSep) {
			f := strings.Split(strings.Trim(rec, traceFieldSep+"\n"), traceFieldSep)
			if len(f) < 2 {
				continue
			}
			row := traceRow{Type: f[0], Details: strings.Join(f[1:], " | ")}
			if ms, err := strconv.ParseInt(f[1], 10, 64); err == nil && ms > 1e12 {
				row.Time = when(time.UnixMilli(ms))
				if len(f) > 3 {
					row.Group = f[3]
				}
			}
			out = append(out, row)
		}
	}
	return out, ""
}

// dlqData is a group's dead-letter page.
type dlqData struct {
	Group, Topic string
	Begin, End   string
	Found        []messageRow
	Clients      []string
	None         bool
}

// dlqPage lists a group's dead letters with a resend button each.
func (c *Console) dlqPage(w http.ResponseWriter, r *request) {
	g := r.FormValue("g")
	d := dlqData{Group: g, Topic: protocol.DLQTopic(g), Begin: r.FormValue("begin"), End: r.FormValue("end")}
	v := view{Title: "Dead letters of " + g, Data: &d}
	begin, err := parseTime(d.Begin)
	var end time.Time
	if err == nil {
		end, err = parseTime(d.End)
	}
	if err != nil {
		v.Error = err.Error()
		c.render(w, r.Request, "dlq", r.session, v)
		return
	}
	found, err := c.opts.Admin.QueryByTime(r.ctx, d.Topic, begin, end, maxFound)
	switch {
	case errors.Is(err, client.ErrNoRoute):
		d.None = true
	case err != nil:
		v.Error = err.Error()
	}
	for _, m := range found {
		d.Found = append(d.Found, rowOf(m, 120))
	}
	if cc, err := c.opts.Admin.ConsumerConnections(r.ctx, g); err == nil {
		for _, m := range cc.ConnectionSet {
			d.Clients = append(d.Clients, m.ClientID)
		}
	}
	c.render(w, r.Request, "dlq", r.session, v)
}

// resend hands a dead letter to a live consumer of its group (CONSUME_MESSAGE_DIRECTLY).
func (c *Console) resend(w http.ResponseWriter, r *request) {
	g, id, to := r.PostForm.Get("g"), r.PostForm.Get("id"), r.PostForm.Get("client")
	back := c.opts.Prefix + "/dlq?g=" + url.QueryEscape(g)
	msgs, err := c.opts.Admin.QueryByID(r.ctx, protocol.DLQTopic(g), id)
	if err != nil {
		c.fail(w, r, back, "resend "+id+": "+err.Error())
		return
	}
	if to == "" {
		cc, err := c.opts.Admin.ConsumerConnections(r.ctx, g)
		if err != nil || len(cc.ConnectionSet) == 0 {
			c.fail(w, r, back, "resend "+id+": group "+g+" has no online consumer to send to")
			return
		}
		to = cc.ConnectionSet[0].ClientID
	}
	res, err := c.opts.Admin.ConsumeMessageDirectly(r.ctx, g, to, msgs[0])
	if err != nil {
		c.fail(w, r, back, "resend "+id+": "+err.Error())
		return
	}
	c.log.Info().Str("user", r.session.user).Str("group", g).Str("msgId", id).Str("client", to).
		Str("result", string(res.ConsumeResult)).Msg("console: dead letter resent")
	msg := fmt.Sprintf("message %s resent to %s: %s", id, to, res.ConsumeResult)
	if res.Remark != "" {
		msg += " (" + res.Remark + ")"
	}
	c.done(w, r, back, msg)
}

// brokerConfig is one broker's configuration.
type brokerConfig struct {
	Broker, Addr string
	ID           int64
	Settings     []property
	Err          string
}

// configData is the configuration page.
type configData struct {
	Query   string
	Brokers []brokerConfig
}

// configPage shows every broker's effective configuration (GET_BROKER_CONFIG).
func (c *Console) configPage(w http.ResponseWriter, r *request) {
	d := configData{Query: r.FormValue("q")}
	v := view{Title: "Configuration", Data: &d}
	ci, err := c.opts.Admin.ClusterInfo(r.ctx)
	if err != nil {
		v.Error = err.Error()
		c.render(w, r.Request, "config", r.session, v)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(ci.Brokers)) {
		b := ci.Brokers[name]
		for _, id := range slices.Sorted(maps.Keys(b.Addrs)) {
			bc := brokerConfig{Broker: name, Addr: b.Addrs[id], ID: id}
			props, err := c.opts.Admin.BrokerConfig(r.ctx, bc.Addr)
			if err != nil {
				bc.Err = err.Error()
			}
			for _, k := range slices.Sorted(maps.Keys(props)) {
				if d.Query == "" || strings.Contains(strings.ToLower(k), strings.ToLower(d.Query)) {
					bc.Settings = append(bc.Settings, property{k, props[k]})
				}
			}
			d.Brokers = append(d.Brokers, bc)
		}
	}
	c.render(w, r.Request, "config", r.session, v)
}
