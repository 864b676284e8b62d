package instance_test

import (
	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// The endpoint's store is the instance store, which can also tell the
// endpoint that its instance was deleted.
var _ mcpserver.Store = (*instance.Store)(nil)
