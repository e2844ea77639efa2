package claude

import (
	"os"
	"os/signal"
	"syscall"
)

// catcher catches the signals the launcher passes on to the chain.
type catcher struct {
	c     chan os.Signal
	ready chan struct{}
}

// catchSignals starts catching SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1
// and SIGUSR2, and SIGCONT and SIGWINCH for job control, in the background;
// until that is done they act as usual.
func catchSignals() *catcher {
	k := &catcher{c: make(chan os.Signal, 8), ready: make(chan struct{})}
	go func() {
		signal.Notify(k.c, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2,
			syscall.SIGCONT, syscall.SIGWINCH)
		close(k.ready)
	}()
	return k
}

// wait returns the channel of caught signals once catching has begun.
func (k *catcher) wait() <-chan os.Signal {
	<-k.ready
	return k.c
}
