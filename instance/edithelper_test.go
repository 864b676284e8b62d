package instance_test

import (
	"fmt"
	"io"
	"os"

	"github.com/agentctl/agentctl/instance"
)

// The test binary, run with editHelperEnv set to a file's path, is a helper
// process that edits that file as connect does, to the bytes on its stdin.
const editHelperEnv = "AGENTCTL_TEST_EDIT_FILE"

// beforeEdit, when set, prepares the helper process (its umask).
var beforeEdit func()

func editHelper(path string) {
	if beforeEdit != nil {
		beforeEdit()
	}
	next, err := io.ReadAll(os.Stdin)
	if err == nil {
		_, err = instance.EditFileForTest(path, next)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
