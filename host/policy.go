package host

import "github.com/opentool-host/opentool-host/sandbox"

// specFor returns the confinement of one plugin instance: the host's
// Config.Sandbox narrowed by the plugin's policy declaration.
// (The policy part lands with NAME.policy.json; until then every plugin
// gets Config.Sandbox.)
func (c *Config) specFor(f fileRef) sandbox.Spec {
	_ = f
	return c.Sandbox
}
