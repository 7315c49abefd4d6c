#!/bin/bash
#PBS -t 0-9%2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
