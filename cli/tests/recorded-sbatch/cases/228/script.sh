#!/bin/bash
#PBS -j oe
#PBS -o joined.out
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
