"""The Python gRPC server of the h2load-rs test bed (grpcio): the same Probe service, Greeter and
server reflection as the Go server (main.go), answering identically, on h2c and TLS ports.

    python server.py --h2c 127.0.0.1:19087 --tls 127.0.0.1:19447 \
        --cert certs/server.crt --key certs/server.key

Runs from the venv tests/setup.sh makes (grpcio, grpcio-tools, grpcio-reflection). The message
and service code is generated from proto/ at start-up by grpcio-tools, in memory
(grpc.protos_and_services): nothing is written to the checkout.
"""

import argparse
import os
import sys
import threading
from concurrent import futures

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "proto"))

import grpc  # noqa: E402
from grpc_reflection.v1alpha import reflection  # noqa: E402

probe_pb2, probe_pb2_grpc = grpc.protos_and_services("probe.proto")
hello_pb2, hello_pb2_grpc = grpc.protos_and_services("helloworld.proto")

# Status codes by number; a number grpcio has no name for ends the call with UNKNOWN.
CODES = {c.value[0]: c for c in grpc.StatusCode}


def asked(code, context):
    """Ends the call with the status a request's code asks for (nothing for 0)."""
    if code != 0:
        context.abort(CODES.get(code, grpc.StatusCode.UNKNOWN), f"asked for code {code}")


def ended(context):
    """An event set when the call ends (deadline, cancellation or completion)."""
    done = threading.Event()
    if not context.add_callback(done.set):
        done.set()
    return done


def pause(ms, context, done):
    """Sleeps ms milliseconds, or ends the call with DEADLINE_EXCEEDED (or CANCELLED) if it ends
    first."""
    if ms == 0:
        return
    wait = ms / 1000
    left = context.time_remaining()
    if left is not None and left < wait:
        done.wait(max(left, 0))
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
    if done.wait(wait):
        context.abort(grpc.StatusCode.CANCELLED, "call ended")


def resp(name, size, seq, received=0):
    return probe_pb2.Resp(message="Hello " + name, payload=b"x" * size, seq=seq, received=received)


class Probe(probe_pb2_grpc.ProbeServicer):
    def Unary(self, req, context):
        pause(req.delay_ms, context, ended(context))
        asked(req.code, context)
        return resp(req.name, req.size, req.seq)

    def ServerStream(self, req, context):
        done = ended(context)
        for i in range(req.count):
            pause(req.delay_ms, context, done)
            yield resp(req.name, req.size, i)
        asked(req.code, context)

    def ClientStream(self, reqs, context):
        first = last = None
        n = 0
        for req in reqs:
            n += 1
            last = req
            if first is None:
                first = req
                asked(req.code, context)
        if first is None:
            return resp("", 0, 0)
        pause(first.delay_ms, context, ended(context))
        return resp(last.name, first.size, last.seq, n)

    def Bidi(self, reqs, context):
        done = ended(context)
        for req in reqs:
            pause(req.delay_ms, context, done)
            asked(req.code, context)
            yield resp(req.name, req.size, req.seq)


class Greeter(hello_pb2_grpc.GreeterServicer):
    def SayHello(self, req, context):
        return hello_pb2.HelloReply(message="Hello " + req.name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h2c", action="append", default=[], help="address for h2c (repeatable)")
    parser.add_argument("--tls", action="append", default=[], help="address for TLS (repeatable)")
    parser.add_argument("--cert", default="certs/server.crt")
    parser.add_argument("--key", default="certs/server.key")
    parser.add_argument("--workers", type=int, default=1100,
                        help="threads: each call in progress holds one")
    args = parser.parse_args()
    h2c = [a for v in args.h2c for a in v.split(",") if a]
    tls = [a for v in args.tls for a in v.split(",") if a]
    if not h2c and not tls:
        parser.error("nothing to serve: give --h2c or --tls")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=args.workers),
                         options=[("grpc.so_reuseport", 0)])
    probe_pb2_grpc.add_ProbeServicer_to_server(Probe(), server)
    hello_pb2_grpc.add_GreeterServicer_to_server(Greeter(), server)
    # grpcio-reflection serves v1alpha only, and cannot resolve a method's name as a symbol
    # (grpc/grpc#34743): a client must ask for the service (grpcurl does; ghz without --proto
    # does not). Left as it is: that is how a real grpcio server behaves.
    reflection.enable_server_reflection([
        probe_pb2.DESCRIPTOR.services_by_name["Probe"].full_name,
        hello_pb2.DESCRIPTOR.services_by_name["Greeter"].full_name,
        reflection.SERVICE_NAME,
    ], server)
    # so_reuseport 0 above: a port another process holds fails here (RuntimeError).
    for addr in h2c:
        server.add_insecure_port(addr)
    if tls:
        with open(args.key, "rb") as f:
            key = f.read()
        with open(args.cert, "rb") as f:
            cert = f.read()
        creds = grpc.ssl_server_credentials([(key, cert)])
        for addr in tls:
            server.add_secure_port(addr, creds)
    server.start()
    print(f"grpc-target (Python, grpcio {grpc.__version__}): h2c {h2c}, TLS {tls}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
