package identity

// Names the external tests use for what the package keeps to itself.
type Env = env

const (
	DefaultCluster = defaultCluster
	MaxNodeLen     = maxNodeLen
	MaxClusterLen  = maxClusterLen
	MaxInstanceLen = maxInstanceLen
	MaxHolderLen   = maxHolderLen
)
