#!/bin/bash
#PBS -l file=10gb
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
