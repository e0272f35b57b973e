package frontdoor

import "github.com/opentool-host/opentool-host/internal/memtrim"

// trimProgram is Config.TrimProgram: memtrim.Program, its outcome logged
// (debug: what it gave back; a kernel without MADV_PAGEOUT only costs
// the pages it would have given back).
func (s *Server) trimProgram() {
	n, err := memtrim.Program()
	if err != nil {
		s.log.Debug("the start's program pages stay resident", "error", err)
		return
	}
	s.log.Debug("gave back the start's program pages", "mapped_bytes", n)
}
