package interop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// A broker with SYNC_FLUSH answers the official client's concurrent sends (one group
// commit for many of them) with SEND_OK, and only once the message is on disk: right
// after each acknowledgement the commit log's flushed offset already covers it. Every
// message is then consumed.
func TestSyncFlushWithOfficialClient(t *testing.T) {
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(b *conf.BrokerConfig) {
		b.FlushDiskType = conf.SyncFlush
	}))
	const topic, n, workers = "SyncFlushTopic", 2000, 16
	createTopic(t, c, topic, 4)
	p := newProducer(t, c, "pg-syncflush")
	cl := c.Broker.Store().CommitLog()

	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("sf-%d", i))))
				cancel()
				if err == nil && res.Status != primitive.SendOK {
					err = fmt.Errorf("status %v", res.Status)
				}
				var off int64
				if err == nil {
					_, off, err = message.DecodeOffsetMsgID(res.OffsetMsgID)
				}
				if err == nil && cl.FlushedOffset() <= off {
					err = fmt.Errorf("acknowledged at %d, flushed only to %d", off, cl.FlushedOffset())
				}
				if err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, cl.MaxOffset(), cl.FlushedOffset(), "nothing written is left unflushed")

	rec := newRecorder()
	newPushConsumer(t, c, "cg-syncflush", topic, "*", rec.handler("c1"))
	rec.waitAll(t, bodies("sf-", n), 60*time.Second, "every SYNC_FLUSH message consumed")
}
