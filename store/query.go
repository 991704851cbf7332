package store

import (
	"fmt"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/message"
)

// QueryResult holds the records a key query found, as views into the commit log; the
// caller must Release it.
type QueryResult struct {
	// Records are the stored bytes of each message, newest first.
	Records [][]byte
	views   []*commitlog.View
}

// Release returns the views.
func (r *QueryResult) Release() {
	for _, v := range r.views {
		v.Release()
	}
	r.views, r.Records = nil, nil
}

// QueryByKey finds up to maxNum messages of topic whose KEYS contain key (or, with
// uniqKey, whose UNIQ_KEY is key) stored between begin and end (Unix ms, inclusive).
// Hash collisions are filtered out by comparing the real key, so every result matches.
func (s *Store) QueryByKey(topic, key string, uniqKey bool, maxNum int, begin, end int64) (*QueryResult, error) {
	res := &QueryResult{}
	if s.idx == nil || maxNum <= 0 {
		return res, nil
	}
	match := func(phy int64) bool {
		rec, v, err := s.cl.ReadRecord(phy)
		if err != nil {
			return false
		}
		if string(rec.Topic) != topic || !recordHasKey(&rec, key, uniqKey) {
			v.Release()
			return false
		}
		if err := rec.VerifyBodyCRC(); err != nil {
			v.Release()
			s.badRead(phy, err)
			return false
		}
		b, err := s.cl.Read(phy, int(rec.StoreSize))
		v.Release()
		if err != nil {
			return false
		}
		res.views = append(res.views, b)
		res.Records = append(res.Records, b.Bytes())
		return true
	}
	if _, err := s.idx.QueryFunc(topic+"#"+key, maxNum, begin, end, match); err != nil {
		res.Release()
		return nil, fmt.Errorf("store: query %s#%s: %w", topic, key, err)
	}
	return res, nil
}

// recordHasKey reports whether the record carries key as its UNIQ_KEY or one of its KEYS.
func recordHasKey(rec *message.Record, key string, uniqKey bool) bool {
	if uniqKey {
		v, ok := message.LookupProperty(rec.Properties, message.PropertyUniqKey)
		return ok && string(v) == key
	}
	keys, ok := message.LookupProperty(rec.Properties, message.PropertyKeys)
	if !ok {
		return false
	}
	for k := range message.KeyWords(keys) {
		if string(k) == key {
			return true
		}
	}
	return false
}
