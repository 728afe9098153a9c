//! The PyTorch peer of `bitonic bench --compare`: `torch.sort` timed with CUDA events by
//! `bench/scripts/torch_peer.py`, which is embedded in the binary (the GPU machine has python3
//! and torch but not this repository), written to a temporary directory and started once
//! per comparison run. Input and output go through raw files in that directory (the largest
//! inputs are GiBs); requests and replies are tab-separated lines on the child's stdin and
//! stdout. The script's docstring describes the protocol and what is timed.
//!
//! torch has no unsigned sort for 32- or 64-bit keys on CUDA, so keys travel as signed
//! words with the top bit flipped ([`to_signed_order`]): `u32` becomes `int32`, `u64`
//! becomes `int64`, same width, same order; the sorted output is flipped back.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufRead as _, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use bitonic::internals::Word;
use bitonic::internals::{KeyEncoding, KeyKind};
use rayon::prelude::*;

/// The script, as the binary carries it.
pub const SCRIPT: &str = include_str!("../scripts/torch_peer.py");

/// The sorter's name in tables, the CSV and the plot.
pub const NAME: &str = "torch-sort";

/// How long the script may take to import torch and create its CUDA context.
const START_TIMEOUT: Duration = Duration::from_secs(180);

/// How long one request (read, upload, all runs, download, write) may take.
const JOB_TIMEOUT: Duration = Duration::from_secs(900);

/// The first field of every line the script writes for us.
const TAG: &str = "@bitonic";

/// Milliseconds of each timed run, the sorted keys and, with values, the sorted values.
pub type TorchTimes<W> = (Vec<f64>, Vec<W>, Option<Vec<u32>>);

/// How the script is started.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The Python interpreter (`python3` from `PATH` unless `--python` says otherwise).
    pub python: String,
    /// CUDA device ordinal for torch.
    pub ordinal: i32,
    /// `torch`, or `python` (the script's host-only protocol test backend).
    backend: &'static str,
    /// Extra environment of the child (tests).
    env: Vec<(String, String)>,
    /// Hold the stream while each timed run is queued.
    pub hold: bool,
}

impl Launch {
    /// torch on CUDA device `ordinal`, through `python`.
    pub fn new(python: &str, ordinal: i32) -> Self {
        Launch {
            python: python.to_string(),
            ordinal,
            backend: "torch",
            env: Vec::new(),
            hold: true,
        }
    }

    /// The script's host-only backend (Python's `sorted()`), for tests of the protocol and
    /// of the comparison without torch or a GPU.
    #[cfg(test)]
    pub fn host_test(python: &str) -> Self {
        Launch {
            backend: "python",
            ..Launch::new(python, 0)
        }
    }

    /// Adds a variable to the child's environment (tests).
    #[cfg(test)]
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.push((key.to_string(), value.to_string()));
    }
}

/// Signed keys in ascending order: our unsigned words are their ordered bits (`src/keys.rs`).
const SIGNED: KeyEncoding = KeyEncoding {
    kind: KeyKind::Signed,
    descending: false,
};

/// Maps an unsigned key to the bits of the signed key of the same width that sorts in the
/// same place: the signed key whose ordered bits it is (the top bit flipped: 0 becomes the
/// most negative value). Its own inverse; [`from_signed_order`] says which way is meant.
pub fn to_signed_order<W: Word>(w: W) -> W {
    SIGNED.decode(w)
}

/// The unsigned key of a signed key torch sorted: its ordered bits.
pub fn from_signed_order<W: Word>(w: W) -> W {
    SIGNED.encode(w)
}

/// One line from the script.
#[derive(Clone, Debug, PartialEq)]
enum Reply {
    /// Started: the device's name, its memory in bytes, torch's version.
    Ready {
        name: String,
        memory_bytes: u64,
        version: String,
    },
    /// Cannot run here (no torch, no CUDA); the script has exited.
    Unavailable(String),
    /// A request's timed runs, in milliseconds, and a note for the row (empty: none), such
    /// as runs whose stream was not held.
    Ok(Vec<f64>, String),
    /// A request failed; the script goes on.
    Error(String),
}

/// Parses one line of the script's stdout: `None` when it is not a protocol line (torch or
/// a library printed something), an error when it is one but malformed.
fn parse_reply(line: &str) -> Option<Result<Reply, String>> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let mut fields = line.split('\t');
    if fields.next() != Some(TAG) {
        return None;
    }
    let kind = fields.next().unwrap_or("");
    let rest: Vec<&str> = fields.collect();
    let text = || rest.join(" ");
    Some(match kind {
        "ready" if rest.len() == 3 => match rest[1].parse::<u64>() {
            Ok(memory_bytes) => Ok(Reply::Ready {
                name: rest[0].to_string(),
                memory_bytes,
                version: rest[2].to_string(),
            }),
            Err(_) => Err(format!("bad memory size in {line:?}")),
        },
        "unavailable" => Ok(Reply::Unavailable(text())),
        "error" => Ok(Reply::Error(text())),
        "ok" if rest.len() == 1 || rest.len() == 2 => rest[0]
            .split_whitespace()
            .map(|t| match t.parse::<f64>() {
                Ok(ms) if ms.is_finite() && ms >= 0.0 => Ok(ms),
                _ => Err(format!("bad time {t:?} in {line:?}")),
            })
            .collect::<Result<Vec<f64>, String>>()
            .map(|ms| Reply::Ok(ms, rest.get(1).map_or("", |n| n.trim()).to_string())),
        _ => Err(format!("malformed reply {line:?}")),
    })
}

/// A directory of our own under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        let base = std::env::temp_dir();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut last = None;
        for attempt in 0..64u32 {
            let path = base.join(format!(
                "bitonic-torch-{}-{}",
                std::process::id(),
                stamp.wrapping_add(attempt)
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(TempDir(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running script.
struct PeerProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    python: String,
}

impl PeerProcess {
    /// Starts the script and waits for its first reply: the process and what it said when
    /// it is ready, or why it cannot run.
    fn start(launch: &Launch, script: &Path) -> Result<(PeerProcess, Reply), String> {
        let mut child = Command::new(&launch.python)
            .arg(script)
            .args(["--serve", "--backend", launch.backend, "--device"])
            .arg(launch.ordinal.to_string())
            .args((!launch.hold).then_some("--no-hold"))
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("{} not found (--python PATH names another)", launch.python)
                }
                _ => format!("cannot start {}: {e}", launch.python),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{}: no pipes to the child", launch.python));
        };
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut process = PeerProcess {
            child,
            stdin,
            lines,
            python: launch.python.clone(),
        };
        let first = process.receive(START_TIMEOUT)?;
        Ok((process, first))
    }

    /// The next protocol line; other lines go to stderr. A timeout or the child's exit is
    /// an error (the caller then drops the process, which ends the child).
    fn receive(&mut self, timeout: Duration) -> Result<Reply, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => match parse_reply(&line) {
                    Some(reply) => return reply,
                    None => eprintln!("torch_peer.py: {line}"),
                },
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!(
                        "no answer from {} within {} s",
                        self.python,
                        timeout.as_secs()
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self
                        .child
                        .wait()
                        .map_or_else(|e| e.to_string(), |s| s.to_string());
                    return Err(format!(
                        "{} exited ({status}) without answering (its stderr is above)",
                        self.python
                    ));
                }
            }
        }
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the script into `dir`, starts it, and removes the file again once the script
/// has answered (Python has read it by then), so that a crash of ours leaves at most an
/// empty directory behind.
fn start_in(dir: &TempDir, launch: &Launch) -> Result<(PeerProcess, Reply), String> {
    let script = dir.0.join("torch_peer.py");
    std::fs::write(&script, SCRIPT)
        .map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    let started = PeerProcess::start(launch, &script);
    let _ = std::fs::remove_file(&script);
    started
}

/// What a request times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// The sort (or the float request's operation) on the device, between CUDA events (the
    /// stream held).
    Device,
    /// The host round trip from and to ordinary memory.
    PageableTrip,
    /// The host round trip from and to pinned memory.
    PinnedTrip,
}

impl Timing {
    /// The script's name for the request.
    fn request(self) -> &'static str {
        match self {
            Timing::Device => "sort",
            Timing::PageableTrip => "trip-pageable",
            Timing::PinnedTrip => "trip-pinned",
        }
    }

    /// The script's name for the timing of a float request: the round trips' names are
    /// the sort's.
    fn float_request(self) -> &'static str {
        match self {
            Timing::Device => "device",
            trip => trip.request(),
        }
    }
}

/// A started torch peer: the script runs, torch has a CUDA context on the device.
pub struct TorchPeer {
    launch: Launch,
    /// Drops after `process` (fields drop in order), so the child has quit before its
    /// directory goes.
    process: RefCell<Option<PeerProcess>>,
    dir: TempDir,
    /// `cuda:N name`, as torch names the device.
    pub label: String,
    /// The device's memory in bytes (0: unknown).
    pub memory_bytes: u64,
    /// torch's version and the CUDA version it was built with.
    pub version: String,
}

/// Starts the script through `launch.python` and returns the running peer, or why torch
/// cannot run here (no python, no torch, torch without CUDA, ...): a sentence for the note
/// of the torch rows, never a panic.
pub fn probe(launch: &Launch) -> Result<TorchPeer, String> {
    if cfg!(target_endian = "big") {
        return Err("the file protocol is little-endian; this host is not".into());
    }
    let dir = TempDir::new().map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let (process, first) = start_in(&dir, launch)?;
    match first {
        Reply::Ready {
            name,
            memory_bytes,
            version,
        } => Ok(TorchPeer {
            launch: launch.clone(),
            process: RefCell::new(Some(process)),
            dir,
            label: format!("cuda:{} {name}", launch.ordinal),
            memory_bytes,
            version,
        }),
        Reply::Unavailable(why) => Err(why),
        other => Err(format!("unexpected first reply {other:?}")),
    }
}

impl TorchPeer {
    /// Times `torch.sort` on `keys` (and `values`, gathered by the returned indices) as
    /// `timing` says: `warmup` untimed runs, then `runs` timed ones; `row_len` > 0 sorts each
    /// row of that many keys on its own (`dim=-1` on a rows x cols tensor). A round trip
    /// moves host tensors to the device, sorts and moves the results back to host tensors,
    /// in ordinary memory or page-locked memory with non-blocking copies (the script's
    /// docstring says exactly what is timed). Returns the milliseconds of each timed run and
    /// the sorted output of the last one, and the script's note on the runs (empty when it
    /// has none; e.g. runs whose stream was not held). Restarts the script if an earlier
    /// request ended it.
    pub fn time<W: Word>(
        &self,
        timing: Timing,
        keys: &[W],
        values: Option<&[u32]>,
        row_len: usize,
        warmup: usize,
        runs: usize,
    ) -> Result<(TorchTimes<W>, String), String> {
        let n = keys.len();
        if values.is_some_and(|v| v.len() != n) {
            return Err("keys and values differ in length".into());
        }
        if n == 0 || runs == 0 {
            return Err("nothing to time (no keys or no runs)".into());
        }
        if row_len > 0 && !n.is_multiple_of(row_len) {
            return Err(format!("{n} keys are not rows of {row_len}"));
        }
        self.with_files(|input, output| {
            let (input_text, output_text) = (path_text(input)?, path_text(output)?);
            write_input(input, keys, values).map_err(|e| format!("writing {input_text}: {e}"))?;
            let bits = 8 * std::mem::size_of::<W>();
            let request = format!(
                "{}\t{bits}\t{}\t{}\t{row_len}\t{warmup}\t{runs}\t{input_text}\t{output_text}",
                timing.request(),
                u8::from(values.is_some()),
                n,
            );
            let (ms, note) = self.exchange(&request, runs)?;
            let (sorted_keys, sorted_values) = read_output::<W>(output, n, values.is_some())
                .map_err(|e| format!("reading {output_text}: {e}"))?;
            Ok(((ms, sorted_keys, sorted_values), note))
        })
    }

    /// Runs `request` with the paths of the request's input and output files in the peer's
    /// directory, and removes both files after, whatever it returns.
    fn with_files<T>(
        &self,
        request: impl FnOnce(&Path, &Path) -> Result<T, String>,
    ) -> Result<T, String> {
        let input = self.dir.0.join("in.bin");
        let output = self.dir.0.join("out.bin");
        let result = request(&input, &output);
        let _ = std::fs::remove_file(&input);
        let _ = std::fs::remove_file(&output);
        result
    }
}

impl TorchPeer {
    /// Sends one request line and waits for its reply: the times of `runs` timed runs and
    /// the script's note. Starts the script again if an earlier request ended it; ends it
    /// when it does not answer in time.
    fn exchange(&self, request: &str, runs: usize) -> Result<(Vec<f64>, String), String> {
        let mut slot = self
            .process
            .try_borrow_mut()
            .map_err(|_| "the torch peer is busy".to_string())?;
        if slot.is_none() {
            match start_in(&self.dir, &self.launch)? {
                (process, Reply::Ready { .. }) => *slot = Some(process),
                (_, Reply::Unavailable(why)) => {
                    return Err(format!("restart failed: {why}"));
                }
                (_, other) => return Err(format!("restart failed: unexpected {other:?}")),
            }
        }
        let Some(process) = slot.as_mut() else {
            return Err("no torch process".into());
        };
        let sent = writeln!(process.stdin, "{request}").and_then(|()| process.stdin.flush());
        if let Err(e) = sent {
            *slot = None;
            return Err(format!("cannot send the request: {e}"));
        }
        let reply = match process.receive(JOB_TIMEOUT) {
            Ok(reply) => reply,
            Err(e) => {
                *slot = None; // ends the child; the next request starts a new one
                return Err(e);
            }
        };
        let (ms, note) = match reply {
            Reply::Ok(ms, note) => (ms, note),
            Reply::Error(e) => return Err(e),
            other => {
                *slot = None;
                return Err(format!("unexpected reply {other:?}"));
            }
        };
        if ms.len() != runs {
            return Err(format!("{} times came back for {runs} runs", ms.len()));
        }
        Ok((ms, note))
    }
}

/// A temporary path as the script's request line carries it (no tabs or line breaks).
fn path_text(p: &Path) -> Result<String, String> {
    p.to_str()
        .filter(|s| !s.contains(['\t', '\n', '\r']))
        .map(str::to_string)
        .ok_or_else(|| format!("temporary path {} cannot be passed on", p.display()))
}

/// Writes `keys` in signed order ([`to_signed_order`]), then `values` as they are, as raw
/// little-endian words (the host is little-endian: [`probe`] says so).
fn write_input<W: Word>(path: &Path, keys: &[W], values: Option<&[u32]>) -> std::io::Result<()> {
    let mut file = File::create(path)?;
    write_words(&mut file, keys, true)?;
    if let Some(values) = values {
        write_words(&mut file, values, false)?;
    }
    Ok(())
}

/// Writes words in chunks (flipping the top bit when asked), without a full copy.
fn write_words<W: Word>(out: &mut impl Write, words: &[W], flip: bool) -> std::io::Result<()> {
    const CHUNK: usize = 1 << 20;
    let mut buf: Vec<W> = Vec::with_capacity(CHUNK.min(words.len()));
    for chunk in words.chunks(CHUNK) {
        buf.clear();
        buf.extend(
            chunk
                .iter()
                .map(|&w| if flip { to_signed_order(w) } else { w }),
        );
        out.write_all(bytemuck::cast_slice(&buf))?;
    }
    Ok(())
}

/// Reads `n` words (flipping the top bit back when asked).
fn read_words<W: Word>(input: &mut impl Read, n: usize, flip: bool) -> std::io::Result<Vec<W>> {
    let mut out = vec![W::ZERO; n];
    input.read_exact(bytemuck::cast_slice_mut(&mut out))?;
    if flip {
        out.par_iter_mut().for_each(|w| *w = from_signed_order(*w));
    }
    Ok(out)
}

/// Reads the script's output: `n` keys (mapped back to unsigned), then `n` values when
/// there are values; the file must be exactly that long.
fn read_output<W: Word>(
    path: &Path,
    n: usize,
    with_values: bool,
) -> std::io::Result<(Vec<W>, Option<Vec<u32>>)> {
    let want = n as u64 * (std::mem::size_of::<W>() as u64 + if with_values { 4 } else { 0 });
    let mut file = File::open(path)?;
    let have = file.metadata()?.len();
    if have != want {
        return Err(std::io::Error::other(format!(
            "{have} bytes, expected {want}"
        )));
    }
    let keys = read_words::<W>(&mut file, n, true)?;
    let values = if with_values {
        Some(read_words::<u32>(&mut file, n, false)?)
    } else {
        None
    };
    Ok((keys, values))
}

mod float;
#[cfg(test)]
mod tests;

pub use float::{FloatDtype, FloatOp};
