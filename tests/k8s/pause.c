/* The pod sandbox's process (Kubernetes' "pause"): holds the pod's namespaces open and does
 * nothing else until it is told to stop. Built statically by tests/k8s/cluster.sh, which makes
 * it the test cluster's sandbox image: no registry is reachable to pull the usual one from. */
#include <signal.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

int main(void) {
  signal(SIGINT, stop);
  signal(SIGTERM, stop);
  for (;;) pause();
}
