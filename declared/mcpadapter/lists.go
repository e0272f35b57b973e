package mcpadapter

import (
	"github.com/opentool-host/opentool-host/pluginsdk"
)

// The server's list_changed, on any of its sessions (the shared one, a
// client's own), reaches every MCP client of the host as the server sent
// it (pluginsdk.ListWatcher):
//
//	server sends                        the adapter
//	notifications/tools/list_changed    lists the tools again on the shared
//	                                    session (follow; DocumentChanged when the
//	                                    document differs), then reports "tools"
//	                                    (ListsChanged)
//	notifications/prompts/list_changed, lists the catalog again (CatalogChanged
//	notifications/resources/            when it differs), then reports "prompts"
//	list_changed                        or "resources"
//
// Reported after the list, so that a client that lists again on the
// notification finds the host's list as new as the adapter's; reported
// whether or not the list changed, for a server may announce a change
// the host cannot see (a tool re-added as it was, a client's own
// session's list: the host serves the shared session's). A burst of
// list_changed while a list is under way is one list and one report.

// listBits maps each list to its bit in Adapter.saidChanged.
var listBits = map[string]uint32{pluginsdk.ListTools: 1, pluginsdk.ListPrompts: 2, pluginsdk.ListResources: 4}

// ListsChanged implements pluginsdk.ListWatcher.
func (a *Adapter) ListsChanged() <-chan string { return a.lists }

// serverSaid records that a session of the server sent list's
// list_changed and asks follow to list it again.
func (a *Adapter) serverSaid(list string) {
	a.saidChanged.Or(listBits[list])
	ch := a.recatalog
	if list == pluginsdk.ListTools {
		ch = a.relist
	}
	select {
	case ch <- struct{}{}:
	default: // a list already due covers this one
	}
}

// passOn reports each of lists whose list_changed the server sent since
// it was last reported, without blocking (the buffer holds one of each).
func (a *Adapter) passOn(lists ...string) {
	for _, l := range lists {
		if a.saidChanged.And(^listBits[l])&listBits[l] == 0 {
			continue
		}
		select {
		case a.lists <- l:
		default:
			a.log.Warn("list_changed not passed on: the host is not taking them", "server", a.launch.Name, "list", l)
		}
	}
}
