; For `swx_bench serve`: replay the trace forever, free what the ports send.
port in 0 source mempool MEMPOOL0 file forward_in.pcap loop 0 packets 0
port out 0 sink file none
port out 1 sink file none
port out 2 sink file none
