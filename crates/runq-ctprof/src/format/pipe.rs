//! Serializing and compressing at once: the JSON is written on the calling
//! thread in [`PIECE`]-byte pieces that a second thread compresses as they
//! come, so a large snapshot's compression mostly overlaps its
//! serialization instead of following it.

use std::io::{self, Write};
use std::sync::mpsc::{sync_channel, SyncSender};

/// How much serialized JSON is handed to the compressor at once.
const PIECE: usize = 128 << 10;

/// Pieces on their way to the compressor, at most.
const IN_FLIGHT: usize = 4;

/// A writer that hands what it is given to the compressor in pieces.
pub(super) struct Pieces {
    tx: SyncSender<Vec<u8>>,
    buf: Vec<u8>,
}

impl Pieces {
    fn send(&mut self) -> io::Result<()> {
        let piece = std::mem::replace(&mut self.buf, Vec::with_capacity(PIECE));
        self.tx
            .send(piece)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the compressor stopped"))
    }
}

impl Write for Pieces {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= PIECE {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.send()
    }
}

/// zstd at `level` of everything `write` writes, compressed on a second
/// thread while `write` goes on. The compressor's error, when it has one,
/// is the one returned (a writer's failed hand-over follows from it).
pub(super) fn compress_while_writing(
    level: i32,
    write: impl FnOnce(&mut Pieces) -> io::Result<()>,
) -> io::Result<Vec<u8>> {
    let (tx, rx) = sync_channel::<Vec<u8>>(IN_FLIGHT);
    std::thread::scope(|s| {
        let compressor = s.spawn(move || {
            let mut enc = zstd::stream::Encoder::new(Vec::new(), level)?;
            for piece in rx {
                enc.write_all(&piece)?;
            }
            enc.finish()
        });
        let mut pieces = Pieces {
            tx,
            buf: Vec::with_capacity(PIECE),
        };
        let written = write(&mut pieces).and_then(|()| pieces.flush());
        // Closing the channel lets the compressor finish.
        drop(pieces);
        let compressed = compressor
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the compressor panicked")));
        match (written, compressed) {
            (_, Err(e)) | (Err(e), Ok(_)) => Err(e),
            (Ok(()), Ok(bytes)) => Ok(bytes),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_across_many_pieces() {
        let text: Vec<u8> = (0..PIECE * 5 + 17).map(|i| (i * 7 % 251) as u8).collect();
        let z = compress_while_writing(3, |w| {
            for part in text.chunks(1000) {
                w.write_all(part)?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(zstd::stream::decode_all(&z[..]).unwrap(), text);
        let empty = compress_while_writing(3, |_| Ok(())).unwrap();
        assert!(zstd::stream::decode_all(&empty[..]).unwrap().is_empty());
    }

    #[test]
    fn a_writer_error_is_returned() {
        let r = compress_while_writing(3, |w| {
            w.write_all(b"{")?;
            Err(io::Error::other("serializer failed"))
        });
        assert_eq!(r.unwrap_err().to_string(), "serializer failed");
    }
}
