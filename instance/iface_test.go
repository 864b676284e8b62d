package instance_test

import (
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// The endpoint's store is the instance store.
var _ mcpserver.Store = (*instance.Store)(nil)
