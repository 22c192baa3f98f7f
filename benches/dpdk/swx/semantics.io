; For `swx_bench once`, run in the directory semantics_check.py wrote the trace to.
port in 0 source mempool MEMPOOL0 file semantics_in.pcap loop 1 packets 0
port out 0 sink file semantics_out0.pcap
port out 1 sink file semantics_out1.pcap
