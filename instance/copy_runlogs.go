package instance

import (
	"database/sql"
	"fmt"
)

// Run logs (`instance logs` from any host): an instance's chunks are copied
// whole, in their order, when the target has none of that instance's, and
// not at all when it has some (a second run, or the instance ran there
// since: its log there is the target's own). Their numbers are the
// target's: a log chunk is known by its instance and order, not its seq.

// runLogRow is a run-log chunk of the source.
type runLogRow struct {
	instance, runID, at string
	data                []byte
}

func (c *copier) copyRunLogs() error {
	stats := &c.st.RunLogs
	copying := map[string]bool{}  // by instance: the target had none of its chunks
	reported := map[string]bool{} // instances not in the source, said once each
	scan := func(rows *sql.Rows) (runLogRow, error) {
		var r runLogRow
		err := rows.Scan(&r.instance, &r.runID, &r.at, &r.data)
		return r, err
	}
	return eachBatch(c, `SELECT instance_id, run_id, at, data FROM run_logs ORDER BY seq`, scan, func(batch []runLogRow) error {
		var ask []string
		for _, r := range batch {
			if _, seen := copying[r.instance]; !seen {
				if ci := c.instances[r.instance]; ci != nil && !ci.leftOut {
					copying[r.instance] = true
					ask = append(ask, r.instance)
				}
			}
		}
		err := queryIn(c, c.dst, `SELECT DISTINCT instance_id FROM run_logs WHERE instance_id IN (`, ask, func(rows *sql.Rows) error {
			var id string
			err := rows.Scan(&id)
			copying[id] = false
			return err
		})
		if err != nil {
			return c.dstErr(err)
		}
		var insert [][]any
		for _, r := range batch {
			switch ci := c.instances[r.instance]; {
			case ci == nil || ci.leftOut:
				stats.Skipped++
				stats.Conflicting++
				if ci == nil && !reported[r.instance] {
					reported[r.instance] = true
					c.conflict("run_logs", r.instance, true, "not copied: its instance %s is not in the source", r.instance)
				}
			case !copying[r.instance]:
				stats.Skipped++ // the target has this instance's log
			default:
				insert = append(insert, []any{r.instance, r.runID, r.at, r.data})
			}
		}
		for len(insert) > 0 {
			n := min(len(insert), copyBatch)
			args := make([]any, 0, n*4)
			for _, row := range insert[:n] {
				args = append(args, row...)
			}
			q := `INSERT INTO run_logs (instance_id, run_id, at, data) VALUES ` + placeholders(c.dst, n*4, 4)
			if _, err := c.dst.Tx.ExecContext(c.ctx, q, args...); err != nil {
				return c.dstErr(fmt.Errorf("copy into run_logs: %w", err))
			}
			stats.Copied += n
			insert = insert[n:]
		}
		return nil
	})
}
