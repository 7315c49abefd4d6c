#!/bin/bash
#PBS -o out.%j
#PBS -e err.txt -j oe
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
