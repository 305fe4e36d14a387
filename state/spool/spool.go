// Package spool keeps, on disk, what a process has promised to deliver
// and not yet delivered: usage records the ledger writer has not written,
// budget commits the store could not take. After a crash (kill -9 included)
// the next process opens the same spool and gets them back.
//
// A spool is an append-only log of checksummed records in segment files,
// and an acknowledgement mark. Records are delivered in the order they were
// appended, so the owner acknowledges a count: Ack(n) says the n oldest
// records need no replay, which the mark records at the next sync. Replay
// is at least once (a process that dies replays what it acknowledged in
// its last SyncEvery too); every owner makes its
// delivery idempotent (the ledger skips a request ID it has, the store a
// commit it has applied), which makes the effect exactly once.
//
// Each Append is one write(2), so a record survives the death of the
// process as soon as Append returns; fsync runs in batches (Options.SyncEvery),
// so a crash of the machine loses at most that interval's records. No fsync
// runs under the lock Append takes: an append, on a request's path, never
// waits for the disk.
package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrFull reports a record the spool had no room for: the caller keeps it
// in memory only, and it is lost if the process dies before delivering it.
// It is counted in switchyard_spool_overflow_total.
var ErrFull = errors.New("spool full")

// ErrLocked reports a spool another live process holds open: two processes
// sharing one spool would replay each other's records.
var ErrLocked = errors.New("spool in use by another process")

// Options tune a spool. Zero fields take the defaults.
type Options struct {
	// MaxBytes bounds the spool's files (64 MiB). A record that would pass
	// it is not written (ErrFull) but still counted as pending, so that
	// acknowledgements stay in step.
	MaxBytes int64
	// SegmentBytes is the size at which a new segment file is started
	// (4 MiB); a segment whose records are all acknowledged is deleted.
	SegmentBytes int64
	// SyncEvery is how often appended records are fsync'd (100ms).
	SyncEvery time.Duration
	// MaxRecord bounds one record (1 MiB); a longer one is refused.
	MaxRecord int
	// Metrics, when set, counts what the spool does.
	Metrics *Metrics
}

func (o *Options) defaults() {
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 4 << 20
	}
	if o.SyncEvery <= 0 {
		o.SyncEvery = 100 * time.Millisecond
	}
	if o.MaxRecord <= 0 {
		o.MaxRecord = 1 << 20
	}
}

// A record on disk is its header, then its payload. The header holds the
// payload's length and its CRC-32C, little-endian; a torn write (the
// process died inside it) fails one or the other and ends the segment.
// HeaderLen is its size, the room [Frame] leaves.
const HeaderLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The acknowledgement mark, in the file "ack": the segment and the offset
// in it where the first record not acknowledged starts, and their CRC.
const markLen = 20

// Spool is one named spool in a directory. Its methods are safe for
// concurrent use.
type Spool struct {
	dir  string
	name string
	o    Options
	m    *Metrics
	lock *os.File
	ack  *os.File

	mu    sync.Mutex
	segs  []*segment // oldest first; the last is the one appended to
	bytes int64      // sum of the segments' sizes
	dirty bool       // written since the last fsync
	acked bool       // acknowledged since the mark was last written
	// rotated are the files of segments rotated away since the last sync,
	// which it makes durable and closes.
	rotated []*os.File
	// delivered are the segments acknowledged whole since the last sync,
	// which deletes their files: an unlink of a full segment can take
	// milliseconds, and appends must not wait for it.
	delivered []uint64
	// syncing makes syncs one at a time; it is taken before mu.
	syncing sync.Mutex
	// fsync is (*os.File).Sync; a test holds it up.
	fsync func(*os.File) error
	stop  chan struct{}
	done  chan struct{}

	closing  sync.Once
	closeErr error
}

// segment is one file. ends holds, for each record in it not yet
// acknowledged, the offset where it ends; start is where the first of them
// begins. A record the spool had no room for ends where the one before it
// did: it is pending in memory but holds no bytes.
type segment struct {
	seq   uint64
	f     *os.File // open only for the last segment
	size  int64
	start int64
	ends  []int64
}

// Open opens the spool named name in dir (made if missing), takes its lock,
// and returns the records a previous process appended and did not
// acknowledge, oldest first. The caller delivers those first and
// acknowledges them like the ones it appends after.
func Open(dir, name string, o Options) (*Spool, [][]byte, error) {
	o.defaults()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, nil, fmt.Errorf("spool %s: %w", name, err)
	}
	s := &Spool{dir: path, name: name, o: o, m: o.Metrics, stop: make(chan struct{}), done: make(chan struct{}), fsync: (*os.File).Sync}
	lock, err := os.OpenFile(filepath.Join(path, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("spool %s: %w", name, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, nil, fmt.Errorf("spool %s in %s: %w", name, dir, ErrLocked)
	}
	s.lock = lock
	records, err := s.load()
	if err != nil {
		s.closeFiles()
		return nil, nil, fmt.Errorf("spool %s: %w", name, err)
	}
	s.m.replayed(name, len(records))
	s.m.size(name, s.bytes)
	go s.syncLoop()
	return s, records, nil
}

// load reads the mark and the segments, deletes those wholly acknowledged,
// cuts a torn record off the end, and starts a new segment to append to.
func (s *Spool) load() ([][]byte, error) {
	ack, err := os.OpenFile(filepath.Join(s.dir, "ack"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	s.ack = ack
	markSeq, markOff := readMark(ack)
	seqs, err := s.segmentFiles()
	if err != nil {
		return nil, err
	}
	var records [][]byte
	for _, seq := range seqs {
		if seq < markSeq {
			if err := os.Remove(s.segPath(seq)); err != nil {
				return nil, err
			}
			continue
		}
		start := int64(0)
		if seq == markSeq {
			start = markOff
		}
		seg, recs, err := s.readSegment(seq, start)
		if err != nil {
			return nil, err
		}
		records = append(records, recs...)
		if len(seg.ends) == 0 {
			if err := os.Remove(s.segPath(seq)); err != nil {
				return nil, err
			}
			continue
		}
		s.segs = append(s.segs, seg)
		s.bytes += seg.size
	}
	next := uint64(1)
	if len(seqs) > 0 {
		next = seqs[len(seqs)-1] + 1
	}
	if err := s.startSegment(next); err != nil {
		return nil, err
	}
	return records, s.writeMark()
}

// readSegment reads the records of segment seq from offset start. A record
// that is short or fails its checksum ends the segment: it was being
// written when the process died (in the last segment) or the disk spoilt
// it. Either way it and what follows are counted as torn and not replayed,
// and the file is cut there so that the next Open does not count them again.
func (s *Spool) readSegment(seq uint64, start int64) (*segment, [][]byte, error) {
	data, err := os.ReadFile(s.segPath(seq))
	if err != nil {
		return nil, nil, err
	}
	seg := &segment{seq: seq, size: int64(len(data))}
	start = min(start, seg.size)
	seg.start = start
	var records [][]byte
	off := start
	for off < seg.size {
		rec, n, ok := decode(data[off:], s.o.MaxRecord)
		if !ok {
			s.m.torn(s.name)
			if err := os.Truncate(s.segPath(seq), off); err != nil {
				return nil, nil, err
			}
			seg.size = off
			break
		}
		off += int64(n)
		records = append(records, rec)
		seg.ends = append(seg.ends, off)
	}
	return seg, records, nil
}

// decode reads one record from b: its payload and length on disk, or false
// when b does not start with a whole, intact record.
func decode(b []byte, maxRecord int) ([]byte, int, bool) {
	if len(b) < HeaderLen {
		return nil, 0, false
	}
	n := binary.LittleEndian.Uint32(b)
	sum := binary.LittleEndian.Uint32(b[4:])
	if int64(n) > int64(maxRecord) || int64(len(b)-HeaderLen) < int64(n) {
		return nil, 0, false
	}
	payload := b[HeaderLen : HeaderLen+int(n)]
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, 0, false
	}
	return slices.Clone(payload), HeaderLen + int(n), true
}

func (s *Spool) segPath(seq uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%016d.seg", seq))
}

// segmentFiles lists the segments' sequence numbers, in order.
func (s *Spool) segmentFiles() ([]uint64, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for _, e := range entries {
		num, ok := strings.CutSuffix(e.Name(), ".seg")
		if !ok {
			continue
		}
		seq, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs, nil
}

func (s *Spool) startSegment(seq uint64) error {
	f, err := os.OpenFile(s.segPath(seq), os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	s.segs = append(s.segs, &segment{seq: seq, f: f})
	return nil
}

// Append writes rec at the end of the spool. When the spool has no room
// (ErrFull) or the write fails, the record still counts as pending, so the
// caller acknowledges it like any other; only its durability is lost, and
// that is counted.
func (s *Spool) Append(rec []byte) error {
	buf := make([]byte, HeaderLen+len(rec))
	copy(buf[HeaderLen:], rec)
	return s.AppendFrame(buf)
}

// Frame returns dst with room at its end for a record's header: the
// caller appends the record after it and hands the whole to
// [Spool.AppendFrame], which so writes it without copying it first.
func Frame(dst []byte) []byte {
	var room [HeaderLen]byte
	return append(dst, room[:]...)
}

// AppendFrame is [Spool.Append] of frame's record, which follows the room
// [Frame] left for its header; it writes the header there.
func (s *Spool) AppendFrame(frame []byte) error {
	rec := frame[HeaderLen:]
	if len(rec) > s.o.MaxRecord {
		s.mu.Lock()
		s.pendHollow()
		s.mu.Unlock()
		s.m.overflow(s.name)
		return fmt.Errorf("spool %s: record of %d bytes: %w", s.name, len(rec), ErrFull)
	}
	buf := frame
	binary.LittleEndian.PutUint32(buf, uint32(len(rec)))
	binary.LittleEndian.PutUint32(buf[4:], crc32.Checksum(rec, castagnoli))

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes+int64(len(buf)) > s.o.MaxBytes && s.acked {
		// Delivered records may hold the room: settling empties a segment
		// all delivered.
		if err := s.settle(); err != nil {
			s.m.failed(s.name)
		}
	}
	if s.bytes+int64(len(buf)) > s.o.MaxBytes {
		s.pendHollow()
		s.m.overflow(s.name)
		return ErrFull
	}
	cur := s.segs[len(s.segs)-1]
	if cur.size >= s.o.SegmentBytes {
		if err := s.rotate(); err != nil {
			s.pendHollow()
			s.m.failed(s.name)
			return fmt.Errorf("spool %s: %w", s.name, err)
		}
		cur = s.segs[len(s.segs)-1]
	}
	n, err := cur.f.Write(buf)
	cur.size += int64(n)
	s.bytes += int64(n)
	if err != nil {
		// A partial write is a torn record the next Open cuts off; cut it
		// now so that records after it stay readable.
		if terr := cur.f.Truncate(cur.size - int64(n)); terr == nil {
			cur.size -= int64(n)
			s.bytes -= int64(n)
		}
		s.pendHollow()
		s.m.failed(s.name)
		return fmt.Errorf("spool %s: %w", s.name, err)
	}
	cur.ends = append(cur.ends, cur.size)
	s.dirty = true
	s.m.appended(s.name)
	s.m.size(s.name, s.bytes)
	return nil
}

// pendHollow counts a record that holds no bytes on disk as pending.
func (s *Spool) pendHollow() {
	cur := s.segs[len(s.segs)-1]
	end := cur.size
	if k := len(cur.ends); k > 0 {
		end = cur.ends[k-1]
	}
	cur.ends = append(cur.ends, end)
}

// rotate starts the next segment; the next sync makes the current one
// durable and closes it.
func (s *Spool) rotate() error {
	cur := s.segs[len(s.segs)-1]
	if err := s.startSegment(cur.seq + 1); err != nil {
		return err
	}
	s.rotated = append(s.rotated, cur.f)
	cur.f = nil
	return nil
}

// Ack marks the n oldest pending records delivered: they are not returned
// by the next Open, once the mark is written. Segments left without pending
// records no longer count against Options.MaxBytes and are deleted by the
// next sync. The mark itself is written, and the segment appended to
// emptied when all of it is delivered, by the next sync (every
// Options.SyncEvery, and at Close): an acknowledgement on every request
// would cost the request path two system calls, and a process that dies
// before the mark is written only replays what it had delivered, which
// delivery tolerates.
func (s *Spool) Ack(n int) error {
	if n <= 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		head := s.segs[0]
		k := min(n, len(head.ends))
		if k > 0 {
			head.start = head.ends[k-1]
			head.ends = head.ends[k:]
			n -= k
		}
		if len(head.ends) > 0 || len(s.segs) == 1 {
			break
		}
		s.delivered = append(s.delivered, head.seq)
		s.bytes -= head.size
		s.segs = s.segs[1:]
	}
	s.dirty, s.acked = true, true
	s.m.size(s.name, s.bytes)
	return nil
}

// settle writes the mark of what was acknowledged since the last one, and
// empties the segment appended to if all of it is delivered.
func (s *Spool) settle() error {
	if !s.acked {
		return nil
	}
	if cur := s.segs[0]; len(s.segs) == 1 && len(cur.ends) == 0 && cur.size > 0 {
		if err := cur.f.Truncate(0); err != nil {
			return fmt.Errorf("spool %s: %w", s.name, err)
		}
		s.bytes -= cur.size
		cur.size, cur.start = 0, 0
		s.m.size(s.name, s.bytes)
	}
	if err := s.writeMark(); err != nil {
		return err
	}
	s.acked = false
	return nil
}

// Pending returns how many records are appended and not acknowledged.
func (s *Spool) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, seg := range s.segs {
		n += len(seg.ends)
	}
	return n
}

// Bytes returns the size of the spool's segment files.
func (s *Spool) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// writeMark records where the first pending record starts. A mark torn by
// a crash fails its checksum and reads as the start of the oldest segment:
// records are then replayed again, which delivery tolerates.
func (s *Spool) writeMark() error {
	head := s.segs[0]
	var b [markLen]byte
	binary.LittleEndian.PutUint64(b[:], head.seq)
	binary.LittleEndian.PutUint64(b[8:], uint64(head.start))
	binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
	_, err := s.ack.WriteAt(b[:], 0)
	return err
}

func readMark(f *os.File) (seq uint64, off int64) {
	var b [markLen]byte
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, markLen), b[:]); err != nil {
		return 0, 0
	}
	if crc32.Checksum(b[:16], castagnoli) != binary.LittleEndian.Uint32(b[16:]) {
		return 0, 0
	}
	return binary.LittleEndian.Uint64(b[:]), int64(binary.LittleEndian.Uint64(b[8:]))
}

// Sync writes the acknowledgement mark and makes what was appended and
// acknowledged so far survive a crash of the machine. The fsyncs run
// outside the lock appends take: one can take tens of milliseconds on a
// busy disk, and every request ending meanwhile would wait for it.
func (s *Spool) Sync() error {
	s.syncing.Lock()
	defer s.syncing.Unlock()
	s.mu.Lock()
	if err := s.settle(); err != nil {
		s.mu.Unlock()
		return err
	}
	dirty, rotated, delivered, cur := s.dirty, s.rotated, s.delivered, s.segs[len(s.segs)-1].f
	s.dirty, s.rotated, s.delivered = false, nil, nil
	s.mu.Unlock()
	// The mark written, a crash before these are gone only leaves files
	// the next Open deletes unread (they are older than the mark).
	for i, seq := range delivered {
		if err := os.Remove(s.segPath(seq)); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.mu.Lock()
			s.delivered = append(delivered[i:], s.delivered...)
			s.mu.Unlock()
			return fmt.Errorf("spool %s: %w", s.name, err)
		}
	}
	var err error
	for i, f := range rotated {
		if err = s.fsync(f); err != nil {
			s.mu.Lock()
			s.rotated = append(rotated[i:], s.rotated...)
			s.dirty = true
			s.mu.Unlock()
			return err
		}
		f.Close()
	}
	if !dirty {
		return nil
	}
	if err = s.fsync(cur); err == nil {
		err = s.fsync(s.ack)
	}
	if err != nil {
		// Appends since were marked dirty anyway; these were not synced.
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
	}
	return err
}

func (s *Spool) syncLoop() {
	defer close(s.done)
	t := time.NewTicker(s.o.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.Sync(); err != nil {
				s.m.failed(s.name)
			}
		}
	}
}

// Close syncs the spool and releases it; what is pending stays for the next
// Open. Closing again does nothing.
func (s *Spool) Close() error {
	s.closing.Do(func() {
		close(s.stop)
		<-s.done
		s.closeErr = s.Sync()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.closeFiles()
	})
	return s.closeErr
}

func (s *Spool) closeFiles() {
	for _, f := range s.rotated {
		f.Close()
	}
	for _, seg := range s.segs {
		if seg.f != nil {
			seg.f.Close()
		}
	}
	if s.ack != nil {
		s.ack.Close()
	}
	s.lock.Close() // releases the flock
}
