package extprocapp

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// echo answers every message with an empty reply, as fast as it can.
type echo struct {
	extprocv3.UnimplementedExternalProcessorServer
}

func (echo) Process(s extprocv3.ExternalProcessor_ProcessServer) error {
	for {
		if _, err := s.Recv(); err != nil {
			return nil
		}
		if err := s.Send(&extprocv3.ProcessingResponse{}); err != nil {
			return err
		}
	}
}

// teed is a client's connection whose reads, the server's frames, are
// copied to w as well.
type teed struct {
	net.Conn
	w *io.PipeWriter
}

func (c teed) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		_, _ = c.w.Write(b[:n])
	}
	if err != nil {
		_ = c.w.CloseWithError(err)
	}
	return n, err
}

func (c teed) Close() error {
	_ = c.w.Close()
	return c.Conn.Close()
}

// serverPings runs a stream of n request-reply exchanges, as Envoy's are,
// against a server with opts, and returns the pings the server sent.
func serverPings(t *testing.T, n int, opts ...grpc.ServerOption) int32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	extprocv3.RegisterExternalProcessorServer(g, echo{})
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()

	var pings atomic.Int32
	parsed := make(chan struct{})
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		r, w := io.Pipe()
		go func() {
			defer close(parsed)
			fr := http2.NewFramer(io.Discard, r)
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					_ = r.CloseWithError(err)
					return
				}
				if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
					pings.Add(1)
				}
			}
		}()
		return teed{Conn: c, w: w}, nil
	}
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithContextDialer(dial), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := extprocv3.NewExternalProcessorClient(conn).Process(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	body := &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}}}
	for range n {
		if err := s.Send(body); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v", err)
	}
	conn.Close()
	<-parsed
	return pings.Load()
}

// TestNoPingPerMessage: ext_proc's server does not answer Envoy's
// messages with pings of its own, each of which Envoy acknowledges and so
// wakes ext_proc once more; grpc-go's default window estimation does.
func TestNoPingPerMessage(t *testing.T) {
	const n = 20
	if got := serverPings(t, n, serverOptions()...); got != 0 {
		t.Errorf("ext_proc's server sent %d pings in %d exchanges, want none", got, n)
	}
	// The test can tell: grpc-go's defaults ping along.
	if got := serverPings(t, n); got < n/2 {
		t.Errorf("with grpc-go's default windows the server sent %d pings in %d exchanges; the test no longer sees them", got, n)
	}
}
