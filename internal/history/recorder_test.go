package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecorderReaderRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ra, err := Create(filepath.Join(dir, "a.jsonl"), "n1/c1/aaaa")
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Create(filepath.Join(dir, "b.jsonl"), "n2/c1/bbbb")
	if err != nil {
		t.Fatal(err)
	}
	full := []Event{
		{Kind: LeaderStart, Lease: "global/outbox", Epoch: 7},
		{Kind: PartitionStart, Pool: "backfill", Index: 0, Count: 3, Generation: 4, Epoch: 9},
		{Kind: Write, Resource: "outbox", Lease: "global/outbox", Epoch: 7, Err: "leasehold: fenced"},
		{Kind: ItemProcessed, Item: 42, Generation: 4},
		{Kind: Fault, FaultKind: FaultPause, Target: "n2/c1/bbbb", TargetPID: 4242, Phase: PhaseStart, Members: map[string]int{"backfill": 2}},
		{Kind: Note, Text: "hello\nworld"},
	}
	for _, e := range full {
		if err := ra.Record(e); err != nil {
			t.Fatal(err)
		}
	}
	const goroutines, each = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		r := ra
		if g%2 == 1 {
			r = rb
		}
		wg.Go(func() {
			for i := range each {
				if err := r.Record(Event{Kind: Write, Resource: fmt.Sprintf("r%d", g), Epoch: int64(i), Accepted: true}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := ra.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ra.Record(Event{Kind: Note}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Record after Close = %v, want ErrClosed", err)
	}

	h, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.Events); n != len(full)+goroutines*each {
		t.Fatalf("read %d events, want %d", n, len(full)+goroutines*each)
	}
	if len(h.Truncated) != 0 {
		t.Errorf("Truncated = %v, want none", h.Truncated)
	}
	perResource := map[string]int64{}
	for i, e := range h.Events {
		if i > 0 && e.Time < h.Events[i-1].Time {
			t.Fatalf("event %d (%s) at %d before event %d at %d", i, e.Source, e.Time, i-1, h.Events[i-1].Time)
		}
		if e.PID != os.Getpid() {
			t.Fatalf("event %s has pid %d, want %d", e.Source, e.PID, os.Getpid())
		}
		if e.Kind == Write && strings.HasPrefix(e.Resource, "r") {
			// One goroutine's events, recorded in order, stay in order.
			if want := perResource[e.Resource]; e.Epoch != want {
				t.Fatalf("%s: resource %s epoch %d, want %d", e.Source, e.Resource, e.Epoch, want)
			}
			perResource[e.Resource]++
			if want := map[bool]string{true: "n2/c1/bbbb", false: "n1/c1/aaaa"}[e.Resource[1]%2 == 1]; e.Process != want || e.Holder != want {
				t.Fatalf("%s: process %q holder %q, want %q", e.Source, e.Process, e.Holder, want)
			}
		}
	}
	// The fully populated events come back field for field.
	var got []Event
	for _, e := range h.Events {
		if e.Process == "n1/c1/aaaa" && (e.Kind != Write || !strings.HasPrefix(e.Resource, "r")) {
			if !strings.HasPrefix(e.Source, filepath.Join(dir, "a.jsonl")+":") {
				t.Errorf("Source = %q", e.Source)
			}
			e.Source = ""
			got = append(got, e)
		}
	}
	if len(got) != len(full) {
		t.Fatalf("got %d of the fully populated events, want %d", len(got), len(full))
	}
	for i, e := range full {
		want := e
		want.Time, want.Process, want.PID = got[i].Time, "n1/c1/aaaa", os.Getpid()
		if want.Kind.holderKind() {
			want.Holder = "n1/c1/aaaa"
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, got[i], want)
		}
		if got[i].Time == 0 {
			t.Errorf("event %d has no time", i)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReaderTruncatedLastLine(t *testing.T) {
	good := `{"t":1,"kind":"note","process":"a","text":"one"}` + "\n" + `{"t":3,"kind":"note","process":"a","text":"two"}` + "\n"
	cut := `{"t":5,"kind":"wri`
	a := writeFile(t, "a.jsonl", good+cut)
	b := writeFile(t, "b.jsonl", `{"t":2,"kind":"note","process":"b"}`) // complete, but no final newline: kept
	h, err := ReadFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range h.Events {
		texts = append(texts, fmt.Sprintf("%d/%s/%s", e.Time, e.Process, e.Text))
	}
	if got, want := strings.Join(texts, " "), "1/a/one 2/b/ 3/a/two"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if want := []string{fmt.Sprintf("%s: %d bytes", a, len(cut))}; !reflect.DeepEqual(h.Truncated, want) {
		t.Errorf("Truncated = %q, want %q", h.Truncated, want)
	}
	if res := Check(h, Config{}); !reflect.DeepEqual(res.Stats.Truncated, h.Truncated) {
		t.Errorf("Stats.Truncated = %q", res.Stats.Truncated)
	}
}

func TestReaderErrors(t *testing.T) {
	bad := writeFile(t, "bad.jsonl", `{"t":1,"kind":"note"}`+"\n"+`{"t":2,"kind"`+"\n"+`{"t":3,"kind":"note"}`+"\n")
	if _, err := ReadFiles(bad); err == nil || !strings.Contains(err.Error(), bad+":2") {
		t.Errorf("malformed middle line: err = %v, want one naming %s:2", err, bad)
	}
	// A complete (newline-terminated) last line that does not decode is not
	// a cut-off write.
	last := writeFile(t, "last.jsonl", `{"t":1,"kind":"note"}`+"\n"+`{"t":2,`+"\n")
	if _, err := ReadFiles(last); err == nil || !strings.Contains(err.Error(), last+":2") {
		t.Errorf("malformed complete last line: err = %v, want one naming %s:2", err, last)
	}
	if _, err := ReadFiles(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("missing file: err = %v", err)
	}
	empty := t.TempDir()
	if _, err := ReadDir(empty); err == nil || !strings.Contains(err.Error(), empty) {
		t.Errorf("empty dir: err = %v, want one naming %s", err, empty)
	}
}

func TestReaderStableOnTies(t *testing.T) {
	a := writeFile(t, "a.jsonl", `{"t":5,"kind":"note","text":"a1"}`+"\n"+`{"t":5,"kind":"note","text":"a2"}`+"\n")
	b := writeFile(t, "b.jsonl", `{"t":4,"kind":"note","text":"b1"}`+"\n"+`{"t":5,"kind":"note","text":"b2"}`+"\n")
	h, err := ReadFiles(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range h.Events {
		texts = append(texts, e.Text)
	}
	if got := strings.Join(texts, " "); got != "b1 a1 a2 b2" {
		t.Errorf("order %q, want %q", got, "b1 a1 a2 b2")
	}
}

type failingWriter struct {
	calls int
	after int // bytes accepted before failing
}

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.after >= len(p) {
		w.after -= len(p)
		return len(p), nil
	}
	n := w.after
	w.after = 0
	return n, errors.New("disk full")
}

func TestRecorderStopsAfterWriteError(t *testing.T) {
	w := &failingWriter{after: 100}
	r := NewRecorder(w, "n/c/i")
	if err := r.Record(Event{Kind: Note, Time: 1, Text: "fits"}); err != nil {
		t.Fatalf("first Record: %v", err)
	}
	err := r.Record(Event{Kind: Note, Time: 2, Text: strings.Repeat("does not fit ", 10)})
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), `"n/c/i"`) {
		t.Fatalf("second Record = %v, want the write error naming the process", err)
	}
	calls := w.calls
	if err2 := r.Record(Event{Kind: Note, Time: 3}); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("third Record = %v, want the same error %v", err2, err)
	}
	if w.calls != calls {
		t.Errorf("Recorder wrote again after a failed write (a partial line must stay last)")
	}
	if r.Err() == nil {
		t.Errorf("Err() = nil after a failed write")
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestRecorderRejectsUnknownKind(t *testing.T) {
	r := NewRecorder(&strings.Builder{}, "n/c/i")
	if err := r.Record(Event{Kind: "leader-begin"}); err == nil || !strings.Contains(err.Error(), `"leader-begin"`) {
		t.Errorf("Record(unknown kind) = %v, want an error naming it", err)
	}
}

func TestRecorderStampsHolderAndNote(t *testing.T) {
	var b strings.Builder
	r := NewRecorder(&b, "n/c/i")
	if err := r.Record(Event{Kind: LeaderStart, Time: 7, Lease: "x", Epoch: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Notef("item %d", 3); err != nil {
		t.Fatal(err)
	}
	evs, dropped, err := Decode(strings.NewReader(b.String()), "mem")
	if err != nil || dropped != 0 || len(evs) != 2 {
		t.Fatalf("Decode = %v, %d, %v", evs, dropped, err)
	}
	if e := evs[0]; e.Time != 7 || e.Holder != "n/c/i" || e.Process != "n/c/i" || e.Source != "mem:1" {
		t.Errorf("leader-start = %+v", e)
	}
	if e := evs[1]; e.Text != "item 3" || e.Holder != "" || e.Time == 0 {
		t.Errorf("note = %+v", e)
	}
}

func TestNowIsMonotonic(t *testing.T) {
	prev := Now()
	if prev <= 0 {
		t.Fatalf("Now() = %d, want > 0", prev)
	}
	for range 1000 {
		n := Now()
		if n < prev {
			t.Fatalf("Now() went back from %d to %d", prev, n)
		}
		prev = n
	}
}

// Now runs at the rate of the process's own monotonic clock: over a sleep
// it advances by at least the sleep and by no more than the process saw
// pass.
func TestNowRunsInNanoseconds(t *testing.T) {
	start, from := time.Now(), Now()
	time.Sleep(20 * time.Millisecond)
	to, took := Now(), time.Since(start)
	if d := time.Duration(to - from); d < 20*time.Millisecond || d > took {
		t.Fatalf("Now() advanced %v over a sleep of 20ms that took %v", d, took)
	}
}
