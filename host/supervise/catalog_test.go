package supervise

import "testing"

// TestParseCatalogFaults: a catalog that is not an object, or an item
// without its key, is refused; none at all is an empty catalog.
func TestParseCatalogFaults(t *testing.T) {
	for _, bad := range []string{`[]`, `{"resources":[{"name":"no uri"}]}`, `{"prompts":[{"title":"no name"}]}`, `{"resourceTemplates":[1]}`} {
		if _, err := ParseCatalog([]byte(bad)); err == nil {
			t.Errorf("ParseCatalog(%s) took it", bad)
		}
	}
	if c, err := ParseCatalog(nil); err != nil || len(c.Resources) != 0 {
		t.Errorf("no catalog: %v, %v", c, err)
	}
}
