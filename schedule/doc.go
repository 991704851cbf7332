// Package schedule delivers delayed messages: RocketMQ 4.x delay levels and 5.x-style
// timer messages with arbitrary delivery times.
//
// # Parking
//
// On the send path the broker calls Service.Rewrite. A message with DELAY level n > 0
// (clamped to the highest level) is parked in protocol.ScheduleTopic, queue n−1, with
// its real topic and queue in the REAL_TOPIC and REAL_QID properties. A message with
// TIMER_DELIVER_MS, TIMER_DELAY_SEC or TIMER_DELAY_MS (and no DELAY) whose delivery time
// lies in the future is parked in protocol.TimerTopic queue 0 with TIMER_OUT_MS = the
// delivery time in Unix ms (ms precision; RocketMQ rounds to seconds). A delivery time
// more than Options.MaxTimerDelay ahead is refused (ErrTimerTooFar); one in the past is
// not parked at all. The store's Options.TagsCode must be TagsCoder(levels): it stores
// each parked message's delivery time as its consume-queue tags code, so the loops
// below decide from consume-queue units alone and read a record only to deliver it.
//
// # Delivery
//
// Each level has a goroutine with a cursor (the next consume-queue offset). A level's
// queue is in delivery-time order (same delay, non-decreasing store times), so the loop
// delivers the due prefix of the queue and then sleeps until exactly the next delivery
// time (a real timer, not RocketMQ's 100 ms polling), until Notify reports a new message
// to an idle level, or until Shutdown. The timer queue is not in delivery-time order: one
// goroutine keeps every loaded, undelivered timer message in a min-heap by delivery time,
// follows the queue's max offset (on every wake-up and on Notify), and sleeps until the
// earliest delivery time. Every sleep is capped at one second.
//
// Delivering means putting a new record to REAL_TOPIC/REAL_QID with the parked record's
// body, flag, sysflag, born host and time, reconsume times and properties minus DELAY
// and the timer properties (REAL_TOPIC and REAL_QID stay, as in RocketMQ); the store
// derives the tags code from TAGS. A record whose real topic is the transaction half
// topic, that has no REAL_TOPIC, or that the store refuses as illegal is dropped and
// logged. A failed put is retried after 100 ms, in order, so a level never overtakes a
// message that could not be stored.
//
// # Guarantees
//
//   - Never early: a message is put only when Options.Clock shows a time at or after its
//     delivery time (ms resolution), checked against both the consume-queue code and the
//     record itself. The one exception is RocketMQ's clock-step guard: a delivery time
//     more than one full level delay (for timers, MaxTimerDelay) ahead of the clock can
//     only come from the clock having stepped back, and such a message is treated as
//     due rather than held back for the length of the step.
//   - Lateness: on an idle broker a message is put within a few ms of its delivery time
//     (timer wake-up latency plus one put). Under load it waits behind the earlier
//     messages of its level or of the timer heap; a failing store delays it by 100 ms
//     per retry.
//   - Restart: progress is persisted every FlushInterval and by Shutdown. After a clean
//     Shutdown nothing is delivered twice. After a crash, the messages delivered since the
//     last persistence (at most about one FlushInterval of deliveries) are delivered
//     again; nothing is lost. Progress is written only after the store has dispatched
//     every delivery it counts (with store.FlushSync: made them durable), so a crash
//     can repeat a delivery but never skip one.
//
// # Files
//
// Progress lives in Dir/config, replaced atomically (mmap.FS.WriteFileAtomic):
//
//   - delayOffset.json — RocketMQ's shape, keyed by delay level:
//     {"offsetTable":{"1":123,"2":0}}. Bare integer keys ({1:123}, fastjson) are read
//     too. Loaded offsets are clamped into the queue's [min, max] (RocketMQ #1869).
//   - timerProgress.json — {"version":1,"watermark":W,"delivered":[[s,e],...]}: every
//     timer-queue offset below W is delivered, and so is every offset in the sorted,
//     disjoint half-open ranges [s, e) above W. The ranges stay small while deliveries
//     happen roughly in queue order; a far-future message holds W back, and each later
//     delivery is then kept in a range until it is delivered.
//
// A progress file that exists but cannot be decoded makes New fail instead of starting
// over, which would redeliver every parked message (RocketMQ #6881).
//
// # Goroutines and locks
//
// Start launches len(Levels) level loops, the timer loop and the progress flusher, all
// through Service.spawn; Shutdown stops and waits for them, then persists. Lock order:
// persistMu, then timerState.mu; no lock is held while calling the store except
// persistMu (around WaitDispatched).
package schedule
