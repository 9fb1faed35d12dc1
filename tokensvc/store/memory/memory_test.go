package memory_test

import (
	"testing"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
	"github.com/mcpmesh/gateway/tokensvc/store/storetest"
)

func TestMemory_Conformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
