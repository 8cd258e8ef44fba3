"""The training engine: tokenizer, data and batching, the models and their decoding, metrics, FLOP and
parameter counts. Nothing here knows about chapters, stores or scaling laws."""
