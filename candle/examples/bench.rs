//! bitonic-candle against candle's own ops and torch, on candle CUDA tensors of the shapes of
//! LLM vocabularies (rows x vocabulary), every result checked. On a machine with a CUDA GPU:
//!
//!     cargo run --release -p bitonic-candle --features cuda --example bench -- [--runs 15]
//!         [--warmup 3] [--python python3] [--no-torch]
//!
//! Cases, `f32` and `bf16` keys, descending (the order of logits):
//! - `argsort`: ours, candle's CUDA `arg_sort_last_dim` (one block a row: it fails past 8192
//!   columns), and `torch.sort(dim=-1)`;
//! - `top_k` (k = 50): ours, candle's host path (the tensor copied to the host and each row
//!   selected there, as candle-transformers' `LogitsProcessor` does), and `torch.topk`;
//! - `sampling` (64 x 128256, f32): softmax on the device, then top-k 50 and top-p 0.9 by our
//!   `top_k`, one draw a row on the host, against the same with every row of probabilities
//!   copied to the host and sorted there (what `LogitsProcessor` does for top-k with top-p).
//!
//! Device times come from CUDA events on the op's stream around the op, ours and candle's
//! kernel on candle's stream as torch's on its own (by `bench/scripts/torch_peer.py`, the
//! bench crate's peer script): the launches count where the device waits for them. Ours is
//! also given as wall-clock time from the call to the device's synchronization; candle's host
//! path and the sampling case, which end on the host, have only that. Medians of `--runs`
//! after `--warmup` untimed runs. Ours is checked bit for bit against
//! candle's CPU `arg_sort_last_dim` of the same keys; torch's sorted keys and top values
//! against a host sort.

#[cfg(feature = "cuda")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    cuda_bench::run()
}

#[cfg(not(feature = "cuda"))]
fn main() {
    eprintln!("not run: the bench needs the `cuda` feature (candle CUDA tensors)");
    std::process::exit(2);
}

#[cfg(feature = "cuda")]
mod cuda_bench {
    use std::io::{BufRead, BufReader, Write};
    use std::path::PathBuf;
    use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
    use std::time::Instant;

    use bitonic::{Order, Sorter};
    use candle_core::cuda_backend::cudarc::driver::DriverError;
    use candle_core::cuda_backend::cudarc::driver::sys::CUevent_flags;
    use candle_core::{D, DType, Device, Tensor};
    use half::bf16;

    /// The torch peer's script, as this binary carries it.
    const TORCH_PEER: &str = include_str!("../../bench/scripts/torch_peer.py");

    /// Rows x vocabulary of the cases: LLM vocabularies, and one shape within candle's kernel.
    const SHAPES: [(usize, usize); 5] = [
        (1, 32000),
        (64, 128_256),
        (256, 151_936),
        (16, 262_144),
        (1024, 4096),
    ];

    /// `k` of the top-k cases.
    const TOP_K: usize = 50;

    type Failure = Box<dyn std::error::Error>;

    struct Options {
        runs: usize,
        warmup: usize,
        python: Option<String>,
    }

    fn options() -> Result<Options, Failure> {
        let mut options = Options {
            runs: 15,
            warmup: 3,
            python: Some("python3".into()),
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or(format!("{arg} needs a value"));
            match arg.as_str() {
                "--runs" => options.runs = value()?.parse()?,
                "--warmup" => options.warmup = value()?.parse()?,
                "--python" => options.python = Some(value()?),
                "--no-torch" => options.python = None,
                other => return Err(format!("unknown argument {other}").into()),
            }
        }
        if options.runs == 0 {
            return Err("--runs must be at least 1".into());
        }
        Ok(options)
    }

    /// Median milliseconds of a timed call: between CUDA events on candle's stream, and on
    /// the host's clock from the call to the device's synchronization.
    #[derive(Clone, Copy)]
    struct Times {
        events: f64,
        wall: f64,
    }

    fn driver(e: DriverError) -> candle_core::Error {
        candle_core::Error::Msg(format!("CUDA events: {e}"))
    }

    /// The medians of `runs` timed calls of `f` after `warmup` untimed ones, each ending with
    /// the device's synchronization; or `f`'s first error.
    fn time<T>(
        device: &Device,
        (warmup, runs): (usize, usize),
        mut f: impl FnMut() -> candle_core::Result<T>,
    ) -> candle_core::Result<(Times, T)> {
        let stream = device.as_cuda_device()?.cuda_stream();
        let timing = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let mut last = None;
        let (mut events, mut wall) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for run in 0..warmup + runs {
            device.synchronize()?;
            let start = Instant::now();
            let before = stream.record_event(timing).map_err(driver)?;
            let out = f()?;
            let after = stream.record_event(timing).map_err(driver)?;
            device.synchronize()?;
            if run >= warmup {
                wall.push(start.elapsed().as_secs_f64() * 1e3);
                events.push(f64::from(before.elapsed_ms(&after).map_err(driver)?));
            }
            last = Some(out);
        }
        let out = last.ok_or_else(|| candle_core::Error::Msg("no run".into()))?;
        let median = |mut ms: Vec<f64>| {
            ms.sort_by(f64::total_cmp);
            ms[ms.len() / 2]
        };
        Ok((
            Times {
                events: median(events),
                wall: median(wall),
            },
            out,
        ))
    }

    /// torch through the bench crate's peer script, started once.
    struct Torch {
        child: Child,
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
        dir: PathBuf,
    }

    impl Torch {
        /// The script started on CUDA device 0, or why it cannot run.
        fn start(python: &str) -> Result<Torch, Failure> {
            let dir =
                std::env::temp_dir().join(format!("bitonic-candle-bench-{}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let script = dir.join("torch_peer.py");
            std::fs::write(&script, TORCH_PEER)?;
            let mut child = Command::new(python)
                .arg(&script)
                .args(["--serve", "--device", "0"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()?;
            let stdin = child.stdin.take().ok_or("no stdin")?;
            let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
            let mut torch = Torch {
                child,
                stdin,
                stdout,
                dir,
            };
            let ready = torch.reply()?;
            match ready.first().map(String::as_str) {
                Some("ready") => Ok(torch),
                _ => Err(format!("torch is not available: {}", ready.join(" ")).into()),
            }
        }

        /// The next protocol line's fields after its tag.
        fn reply(&mut self) -> Result<Vec<String>, Failure> {
            let mut line = String::new();
            loop {
                line.clear();
                if self.stdout.read_line(&mut line)? == 0 {
                    return Err("the torch peer exited".into());
                }
                let mut fields = line.trim_end().split('\t');
                if fields.next() == Some("@bitonic") {
                    return Ok(fields.map(str::to_string).collect());
                }
            }
        }

        /// The median milliseconds of `op` (`fsort` or `ftopk`) on `keys` (bits of `dtype`)
        /// in rows of `row_len`, and its output: the sorted rows, or each row's `k` largest.
        fn time<K: bytemuck::Pod>(
            &mut self,
            op: &str,
            dtype: &str,
            keys: &[K],
            (row_len, k): (usize, usize),
            (warmup, runs): (usize, usize),
        ) -> Result<(f64, Vec<K>), Failure> {
            let (input, output) = (self.dir.join("in"), self.dir.join("out"));
            std::fs::write(&input, bytemuck::cast_slice::<K, u8>(keys))?;
            let n = keys.len();
            writeln!(
                self.stdin,
                "{op}\tdevice\t{dtype}\t{n}\t{row_len}\t{k}\t{warmup}\t{runs}\t{}\t{}",
                input.display(),
                output.display()
            )?;
            self.stdin.flush()?;
            let reply = self.reply()?;
            if reply.first().map(String::as_str) != Some("ok") {
                return Err(format!("torch: {}", reply.join(" ")).into());
            }
            let mut ms: Vec<f64> = reply
                .get(1)
                .map(|t| t.split_whitespace().map(str::parse).collect())
                .transpose()?
                .unwrap_or_default();
            ms.sort_by(f64::total_cmp);
            let median = *ms.get(ms.len() / 2).ok_or("torch gave no times")?;
            let bytes = std::fs::read(&output)?;
            Ok((median, bytemuck::pod_collect_to_vec(&bytes)))
        }
    }

    impl Drop for Torch {
        fn drop(&mut self) {
            let _ = writeln!(self.stdin, "quit");
            let _ = self.stdin.flush();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// A key type of the cases: its candle dtype and torch's name of it.
    trait Key: candle_core::WithDType + bytemuck::Pod {
        const TORCH: &'static str;
        fn total(self) -> f64;
    }

    impl Key for f32 {
        const TORCH: &'static str = "float32";
        fn total(self) -> f64 {
            f64::from(self)
        }
    }

    impl Key for bf16 {
        const TORCH: &'static str = "bfloat16";
        fn total(self) -> f64 {
            f64::from(self.to_f32())
        }
    }

    /// Random finite logits in [-8, 8) of `K`, from a fixed xorshift.
    fn logits<K: Key>(n: usize, seed: u64) -> Vec<K> {
        let mut state = seed | 1;
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                K::from_f64(((state >> 40) as f64 / (1u64 << 24) as f64) * 16.0 - 8.0)
            })
            .collect()
    }

    /// A cell of a table: a time, or why there is none.
    fn cell(result: &Result<f64, String>) -> String {
        match result {
            Ok(ms) => format!("{ms:.3}"),
            Err(why) => format!("fails ({})", why.chars().take(40).collect::<String>()),
        }
    }

    /// `peer / ours`, where both ran.
    fn ratio(ours: f64, peer: &Result<f64, String>) -> String {
        peer.as_ref()
            .map_or("-".into(), |p| format!("{:.2}x", p / ours))
    }

    /// What candle's column holds: its kernel, timed by events as ours is, or its host path,
    /// whose time ends on the host and is set against our wall-clock time.
    enum Candle {
        Kernel(Result<f64, String>),
        Host(Result<f64, String>),
    }

    /// One row of the table: ours against candle and torch.
    fn row(case: String, ours: Times, candle: &Candle, torch: &Result<f64, String>) {
        let (candle, ours_then, how) = match candle {
            Candle::Kernel(ms) => (ms, ours.events, ""),
            Candle::Host(ms) => (ms, ours.wall, " (host path, wall)"),
        };
        println!(
            "| {case} | {:.3} | {:.3} | {}{how} | {} | {} | {} |",
            ours.events,
            ours.wall,
            cell(candle),
            cell(torch),
            ratio(ours_then, candle),
            ratio(ours.events, torch)
        );
    }

    /// torch's median milliseconds of `op` on `keys`, where torch runs and `correct` accepts
    /// its output.
    fn torch_time<K: Key>(
        torch: &mut Option<Torch>,
        op: &str,
        keys: &[K],
        shape: (usize, usize),
        times: (usize, usize),
        correct: impl FnOnce(&[K]) -> bool,
    ) -> Result<f64, String> {
        let torch = torch.as_mut().ok_or("not run")?;
        let (ms, out) = torch
            .time(op, K::TORCH, keys, shape, times)
            .map_err(|e| e.to_string())?;
        check(&format!("torch {op}"), correct(&out)).map_err(|e| e.to_string())?;
        Ok(ms)
    }

    fn check(what: &str, ok: bool) -> Result<(), Failure> {
        if ok {
            Ok(())
        } else {
            Err(format!("{what}: the result differs from its oracle").into())
        }
    }

    fn argsort_case<K: Key>(
        sorter: &Sorter,
        gpu: &Device,
        torch: &mut Option<Torch>,
        (rows, cols): (usize, usize),
        times: (usize, usize),
    ) -> Result<(), Failure> {
        let keys: Vec<K> = logits(rows * cols, (rows * cols) as u64);
        let host = Tensor::from_vec(keys.clone(), (rows, cols), &Device::Cpu)?;
        let t = host.to_device(gpu)?;
        let (ours, indices) = time(gpu, times, || {
            bitonic_candle::argsort(sorter, &t, Order::Descending)
        })?;
        let want = host.arg_sort_last_dim(false)?.to_vec2::<u32>()?;
        check("argsort", indices.to_vec2::<u32>()? == want)?;
        let candle = Candle::Kernel(
            time(gpu, times, || t.arg_sort_last_dim(false))
                .map(|(ms, _)| ms.events)
                .map_err(|e| e.to_string()),
        );
        // torch sorts ascending: each row, reversed, is ours by value.
        let torch_ms = torch_time(torch, "fsort", &keys, (cols, 0), times, |sorted| {
            sorted
                .chunks(cols)
                .zip(&want)
                .zip(keys.chunks(cols))
                .all(|((got, order), row)| {
                    got.iter()
                        .rev()
                        .zip(order)
                        .all(|(g, &i)| g.total() == row[i as usize].total())
                })
        });
        row(
            format!("argsort {} {rows} x {cols}", K::TORCH),
            ours,
            &candle,
            &torch_ms,
        );
        Ok(())
    }

    fn top_k_case<K: Key>(
        sorter: &Sorter,
        gpu: &Device,
        torch: &mut Option<Torch>,
        (rows, cols): (usize, usize),
        times: (usize, usize),
    ) -> Result<(), Failure> {
        let keys: Vec<K> = logits(rows * cols, (rows * cols) as u64 ^ 0x5eed);
        let host = Tensor::from_vec(keys.clone(), (rows, cols), &Device::Cpu)?;
        let t = host.to_device(gpu)?;
        let (ours, (_, indices)) = time(gpu, times, || {
            bitonic_candle::top_k(sorter, &t, TOP_K, Order::Descending)
        })?;
        let want = host.arg_sort_last_dim(false)?.narrow(D::Minus1, 0, TOP_K)?;
        check("top_k", indices.to_vec2::<u32>()? == want.to_vec2::<u32>()?)?;
        // candle's host path: the tensor copied to the host, each row's best k selected there.
        let candle = time(gpu, times, || {
            let values = t.to_device(&Device::Cpu)?.to_vec2::<K>()?;
            Ok(values
                .into_iter()
                .map(|row| {
                    let mut ids: Vec<u32> = (0..cols as u32).collect();
                    let by = |a: &u32, b: &u32| {
                        row[*b as usize]
                            .total()
                            .total_cmp(&row[*a as usize].total())
                    };
                    ids.select_nth_unstable_by(TOP_K - 1, by);
                    ids.truncate(TOP_K);
                    ids.sort_by(by);
                    ids
                })
                .collect::<Vec<_>>())
        })
        .map(|(ms, _)| ms.wall)
        .map_err(|e| e.to_string());
        let candle = Candle::Host(candle);
        let best: Vec<Vec<f64>> = want
            .to_vec2::<u32>()?
            .iter()
            .zip(keys.chunks(cols))
            .map(|(ids, row)| ids.iter().map(|&i| row[i as usize].total()).collect())
            .collect();
        let torch_ms = torch_time(torch, "ftopk", &keys, (cols, TOP_K), times, |values| {
            values
                .chunks(TOP_K)
                .zip(&best)
                .all(|(got, want)| got.iter().map(|v| v.total()).eq(want.iter().copied()))
        });
        row(
            format!("top_k {TOP_K} {} {rows} x {cols}", K::TORCH),
            ours,
            &candle,
            &torch_ms,
        );
        Ok(())
    }

    /// Top-p among each row's `best` probabilities (sorted, largest first) and a draw: the
    /// position in `best` of the drawn token.
    fn draw(best: &[f32], p: f32, u: f32) -> usize {
        let mut mass = 0.0f32;
        let keep = best
            .iter()
            .take_while(|&&q| {
                let before = mass;
                mass += q;
                before < p
            })
            .count()
            .max(1);
        let total: f32 = best[..keep].iter().sum();
        let mut target = u * total;
        for (i, &q) in best[..keep].iter().enumerate() {
            if target < q {
                return i;
            }
            target -= q;
        }
        keep - 1
    }

    fn sampling_case(sorter: &Sorter, gpu: &Device, times: (usize, usize)) -> Result<(), Failure> {
        let (rows, vocab, p) = (64usize, 128_256usize, 0.9f32);
        let logits = Tensor::from_vec(logits::<f32>(rows * vocab, 7), (rows, vocab), &Device::Cpu)?
            .to_device(gpu)?;
        let softmax = |logits: &Tensor| -> candle_core::Result<Tensor> {
            let max = logits.max_keepdim(D::Minus1)?;
            let exp = logits.broadcast_sub(&max)?.exp()?;
            exp.broadcast_div(&exp.sum_keepdim(D::Minus1)?)
        };
        let uniform = |row: usize| ((row as u64 * 0x9e37_79b9) % 1000) as f32 / 1000.0;
        let (ours, tokens) = time(gpu, times, || {
            let probs = softmax(&logits)?;
            let (best, ids) = bitonic_candle::top_k(sorter, &probs, TOP_K, Order::Descending)?;
            let (best, ids) = (best.to_vec2::<f32>()?, ids.to_vec2::<u32>()?);
            Ok((0..rows)
                .map(|r| ids[r][draw(&best[r], p, uniform(r))])
                .collect::<Vec<u32>>())
        })?;
        let (host, host_tokens) = time(gpu, times, || {
            let probs = softmax(&logits)?.to_dtype(DType::F32)?.to_vec2::<f32>()?;
            Ok(probs
                .iter()
                .enumerate()
                .map(|(r, row)| {
                    let mut ids: Vec<u32> = (0..vocab as u32).collect();
                    ids.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]));
                    let best: Vec<f32> = ids[..TOP_K].iter().map(|&i| row[i as usize]).collect();
                    ids[draw(&best, p, uniform(r))]
                })
                .collect::<Vec<u32>>())
        })?;
        check("sampling", tokens == host_tokens)?;
        println!(
            "| sampling top-k {TOP_K} top-p {p} f32 {rows} x {vocab} | - | {:.3} | {:.3} (host sort, wall) | - | {:.2}x | - |",
            ours.wall,
            host.wall,
            host.wall / ours.wall
        );
        Ok(())
    }

    pub fn run() -> Result<(), Failure> {
        let options = options()?;
        let sorter = Sorter::builder()
            .backend(bitonic::BackendKind::Cuda)
            .build()
            .map_err(|e| format!("not run: no CUDA sorter ({e})"))?;
        let gpu = Device::new_cuda(0)?;
        let mut torch = match &options.python {
            Some(python) => match Torch::start(python) {
                Ok(torch) => Some(torch),
                Err(e) => {
                    eprintln!("torch not run: {e}");
                    None
                }
            },
            None => None,
        };
        let times = (options.warmup, options.runs);
        println!(
            "bitonic-candle on {}, medians of {} ms (device: CUDA events around the op, ours and \
             candle's kernel on candle's stream, torch's on its own; wall: from the call to the \
             device's synchronization)",
            sorter.device(),
            options.runs
        );
        println!(
            "| case | ours, device | ours, wall | candle | torch, device | candle / ours | torch / ours |"
        );
        println!("|---|---|---|---|---|---|---|");
        for shape in SHAPES {
            argsort_case::<f32>(&sorter, &gpu, &mut torch, shape, times)?;
            argsort_case::<bf16>(&sorter, &gpu, &mut torch, shape, times)?;
        }
        for shape in SHAPES {
            top_k_case::<f32>(&sorter, &gpu, &mut torch, shape, times)?;
            top_k_case::<bf16>(&sorter, &gpu, &mut torch, shape, times)?;
        }
        sampling_case(&sorter, &gpu, times)?;
        Ok(())
    }
}
