// Command grpc-target is the Go gRPC server of the h2load-rs test bed (grpc-go): the Probe service
// of proto/probe.proto, helloworld's Greeter and server reflection, on h2c ports, h2c ports whose
// server allows only 8 concurrent streams per connection, and TLS ports. server.py is the same
// server in Python (grpcio); both answer identically.
//
//	grpc-target -h2c 127.0.0.1:19085 -h2c-capped 127.0.0.1:19086 \
//	  -tls 127.0.0.1:19445 -cert certs/server.crt -key certs/server.key
//
// Every address flag may be repeated or given a comma-separated list. The generated code in
// probepb/ and helloworldpb/ comes from gen.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"h2load-rs/tests/grpc-target/helloworldpb"
	"h2load-rs/tests/grpc-target/probepb"
)

// xs is shared payload: a response's payload is a slice of it when it is big enough (messages
// are only read after they are built, so sharing is safe).
var xs = []byte(strings.Repeat("x", 1<<20))

func payload(size uint32) []byte {
	if int(size) <= len(xs) {
		return xs[:size]
	}
	return []byte(strings.Repeat("x", int(size)))
}

// pause sleeps ms milliseconds, or returns the call's status (DEADLINE_EXCEEDED, CANCELLED) if it
// ends first.
func pause(ctx context.Context, ms uint32) error {
	if ms == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// asked is the status a request's code asks for, nil for 0.
func asked(code int32) error {
	if code == 0 {
		return nil
	}
	return status.Errorf(codes.Code(code), "asked for code %d", code)
}

type probe struct {
	probepb.UnimplementedProbeServer
}

func (probe) Unary(ctx context.Context, req *probepb.Req) (*probepb.Resp, error) {
	if err := pause(ctx, req.DelayMs); err != nil {
		return nil, err
	}
	if err := asked(req.Code); err != nil {
		return nil, err
	}
	return &probepb.Resp{Message: "Hello " + req.Name, Payload: payload(req.Size), Seq: req.Seq}, nil
}

func (probe) ServerStream(req *probepb.Req, stream grpc.ServerStreamingServer[probepb.Resp]) error {
	for i := uint32(0); i < req.Count; i++ {
		if err := pause(stream.Context(), req.DelayMs); err != nil {
			return err
		}
		resp := &probepb.Resp{Message: "Hello " + req.Name, Payload: payload(req.Size), Seq: uint64(i)}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return asked(req.Code)
}

func (probe) ClientStream(stream grpc.ClientStreamingServer[probepb.Req, probepb.Resp]) error {
	var first, last *probepb.Req
	var n uint32
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		n++
		last = req
		if first == nil {
			first = req
			if err := asked(req.Code); err != nil {
				return err
			}
		}
	}
	resp := &probepb.Resp{Message: "Hello ", Received: n}
	if first != nil {
		if err := pause(stream.Context(), first.DelayMs); err != nil {
			return err
		}
		resp.Message += last.Name
		resp.Payload = payload(first.Size)
		resp.Seq = last.Seq
	}
	return stream.SendAndClose(resp)
}

func (probe) Bidi(stream grpc.BidiStreamingServer[probepb.Req, probepb.Resp]) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := pause(stream.Context(), req.DelayMs); err != nil {
			return err
		}
		if err := asked(req.Code); err != nil {
			return err
		}
		resp := &probepb.Resp{Message: "Hello " + req.Name, Payload: payload(req.Size), Seq: req.Seq}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

type greeter struct {
	helloworldpb.UnimplementedGreeterServer
}

func (greeter) SayHello(_ context.Context, req *helloworldpb.HelloRequest) (*helloworldpb.HelloReply, error) {
	return &helloworldpb.HelloReply{Message: "Hello " + req.Name}, nil
}

// addrs is a repeatable flag of comma-separated addresses.
type addrs []string

func (a *addrs) String() string { return strings.Join(*a, ",") }

func (a *addrs) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*a = append(*a, s)
		}
	}
	return nil
}

func newServer(opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(opts...)
	probepb.RegisterProbeServer(s, probe{})
	helloworldpb.RegisterGreeterServer(s, greeter{})
	reflection.Register(s)
	return s
}

func main() {
	var h2c, capped, secure addrs
	flag.Var(&h2c, "h2c", "address for gRPC over h2c (repeatable, or a comma-separated list)")
	flag.Var(&capped, "h2c-capped", "address for gRPC over h2c with at most 8 concurrent streams per connection")
	flag.Var(&secure, "tls", "address for gRPC over TLS (h2)")
	cert := flag.String("cert", "certs/server.crt", "TLS certificate")
	key := flag.String("key", "certs/server.key", "TLS key")
	flag.Parse()
	if len(h2c)+len(capped)+len(secure) == 0 {
		log.Fatal("nothing to serve: give -h2c, -h2c-capped or -tls")
	}

	type listener struct {
		server *grpc.Server
		addr   string
	}
	var all []listener
	if len(h2c) > 0 {
		s := newServer()
		for _, a := range h2c {
			all = append(all, listener{s, a})
		}
	}
	if len(capped) > 0 {
		s := newServer(grpc.MaxConcurrentStreams(8))
		for _, a := range capped {
			all = append(all, listener{s, a})
		}
	}
	if len(secure) > 0 {
		creds, err := credentials.NewServerTLSFromFile(*cert, *key)
		if err != nil {
			log.Fatal(err)
		}
		s := newServer(grpc.Creds(creds))
		for _, a := range secure {
			all = append(all, listener{s, a})
		}
	}

	done := make(chan error, len(all))
	for _, l := range all {
		lis, err := net.Listen("tcp", l.addr)
		if err != nil {
			log.Fatal(err)
		}
		go func() { done <- fmt.Errorf("%s: %w", l.addr, l.server.Serve(lis)) }()
	}
	log.Fatal(<-done)
}
