//! One sampled token per row of logits: a softmax, the `k` most probable tokens of each row by
//! `bitonic_candle::top_k`, top-p among them (the fewest best whose probability reaches `p`),
//! and a draw from those. Run with `cargo run --release -p bitonic-candle --example sampling`.
//!
//! candle-transformers' `LogitsProcessor` copies every row of probabilities to the host and
//! sorts it there; here the rows are sorted where the sorter runs, and only each row's `k`
//! best probabilities and their ids are read on the host. Built with `--features cuda` and run
//! with a CUDA sorter, the softmax and the top-k run on the sorter's GPU, where the logits are.

use std::time::Instant;

use bitonic::{Order, Sorter};
use candle_core::{D, Device, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sorter = Sorter::new()?;
    let (rows, vocab, k, p) = (64usize, 128_256usize, 50usize, 0.9f32);
    // xorshift draws in [0, 1).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let logits: Vec<f32> = (0..rows * vocab).map(|_| uniform() * 8.0).collect();
    let logits =
        Tensor::from_vec(logits, (rows, vocab), &Device::Cpu)?.to_device(&device(&sorter)?)?;
    let max = logits.max_keepdim(D::Minus1)?;
    let exp = logits.broadcast_sub(&max)?.exp()?;
    let probs = exp.broadcast_div(&exp.sum_keepdim(D::Minus1)?)?;

    let start = Instant::now();
    let (best, ids) = bitonic_candle::top_k(&sorter, &probs, k, Order::Descending)?;
    let (best, ids) = (best.to_vec2::<f32>()?, ids.to_vec2::<u32>()?);
    let tokens: Vec<u32> = best
        .iter()
        .zip(&ids)
        .map(|(best, ids)| {
            // Top-p: the fewest best tokens whose probability reaches p, then a draw among them.
            let keep = best
                .iter()
                .scan(0.0f32, |mass, &q| {
                    let before = *mass;
                    *mass += q;
                    Some(before)
                })
                .take_while(|&before| before < p)
                .count();
            let mass: f32 = best[..keep].iter().sum();
            let mut target = uniform() * mass;
            for (&q, &id) in best[..keep].iter().zip(ids) {
                if target < q {
                    return id;
                }
                target -= q;
            }
            ids[keep - 1]
        })
        .collect();
    let elapsed = start.elapsed();

    // The first row's best k against a stable sort of it on the host.
    let row: Vec<f32> = probs.get(0)?.to_vec1()?;
    let mut order: Vec<u32> = (0..vocab as u32).collect();
    order.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]));
    assert_eq!(ids[0], order[..k]);
    assert!(tokens.iter().zip(&ids).all(|(t, ids)| ids.contains(t)));
    println!(
        "{rows} rows of {vocab} logits on {}: top-{k}, top-p {p} and a draw in {:.2} ms; first tokens {:?}",
        sorter.device(),
        elapsed.as_secs_f64() * 1e3,
        &tokens[..8]
    );
    Ok(())
}

/// Where the logits live: the sorter's GPU where it is a CUDA one (and the `cuda` feature is
/// on), so that `top_k` sorts them there; else the host.
fn device(sorter: &Sorter) -> candle_core::Result<Device> {
    #[cfg(feature = "cuda")]
    if sorter.cuda().is_some()
        && let Some(gpu) = sorter.devices().first()
    {
        return Device::new_cuda(gpu.index);
    }
    let _ = sorter;
    Ok(Device::Cpu)
}
