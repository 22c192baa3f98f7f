; For `swx_bench once`: read the trace once, write what each port sends to a pcap.
; The pipeline adds a drop port of its own after these (where `drop` sends).
; Paths are relative to the directory swx_bench runs in.
port in 0 source mempool MEMPOOL0 file forward_in.pcap loop 1 packets 0
port out 0 sink file out0.pcap
port out 1 sink file out1.pcap
port out 2 sink file out2.pcap
