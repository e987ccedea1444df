// SPDX-License-Identifier: MIT

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bfc42b4f/retry"
)

// Do retries a call that fails twice, then succeeds.
func ExampleDo() {
	attempt := 0
	err := retry.Do(context.Background(), retry.Policy{Base: time.Millisecond}, func(ctx context.Context) error {
		attempt++
		fmt.Println("attempt", attempt)
		if attempt < 3 {
			return errors.New("connection refused")
		}
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// attempt 1
	// attempt 2
	// attempt 3
	// err: <nil>
}
