"""The streaming HTTP client of `repro bench`: keep-alive HTTP/1.1 connections framed by llhttp
(http1), SGLang's request bodies and SSE events (wire), what an event means (readers), and
the load generator that times every event as it comes off the socket (stream)."""
