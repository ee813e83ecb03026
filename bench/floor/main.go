// The smallest possible zot extension, the floor bench/run.py compares every
// skeleton with: it says hello, answers hello_ack with ready and exits on
// shutdown or at the end of stdin. No JSON parsing, no registrations, no
// requests answered; only Go's standard library.
package main

import (
	"bufio"
	"bytes"
	"os"
)

func main() {
	os.Stdout.WriteString(`{"type":"hello","name":"floor","version":"0.0.0","capabilities":[]}` + "\n")
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		switch {
		case bytes.Contains(line, []byte(`"hello_ack"`)):
			os.Stdout.WriteString(`{"type":"ready"}` + "\n")
		case bytes.Contains(line, []byte(`"shutdown"`)):
			os.Exit(0)
		}
		if err != nil && err != bufio.ErrBufferFull {
			os.Exit(0) // end of stdin: zot has stopped listening
		}
	}
}
