package host

// PluginTLS is pluginTLS, for the external tests (hostcert_test.go).
var PluginTLS = pluginTLS
