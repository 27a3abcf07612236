#!/usr/bin/env python3
"""An HTTP server on loopback that answers every request with a 200 head promising a body it
never finishes: it sends a few bytes of it, then holds the connection open and silent.

Usage: stalling_http.py
Prints the port it listens on (127.0.0.1).
"""
import asyncio


async def handle(reader, writer):
    try:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"keys\": [")
        await writer.drain()
        await asyncio.sleep(3600)
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
