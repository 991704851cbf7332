// Command hello prints its arguments; testkit's tests build it with Binary.
package main

import (
	"fmt"
	"os"
)

func main() { fmt.Println(os.Args[1:]) }
